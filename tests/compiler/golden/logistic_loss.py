def srcad_scope(add_into, array_of, cotangent_number, divide_into, matmul_vjp_b, multiply_into, negative_into, reduced_size, shape_of, unbroadcast, unbroadcast_from, uniform_unbroadcast):

    def logistic_loss_vjp(w, b, x, y):
        matmul_0 = x @ w
        z = matmul_0 + b
        matmul_0 = shape_of(matmul_0)
        neg_1 = -z
        del z
        exp_2 = np.exp(neg_1)
        del neg_1
        add_3 = 1.0 + exp_2
        p = 1.0 / add_3
        log_4 = np.log(p)
        mul_5 = y * log_4
        log_4 = shape_of(log_4)
        sub_6 = 1.0 - y
        sub_7 = 1.0 - p
        log_8 = np.log(sub_7)
        mul_9 = sub_6 * log_8
        log_8 = shape_of(log_8)
        add_10 = mul_5 + mul_9
        mul_5 = shape_of(mul_5)
        mul_9 = shape_of(mul_9)
        mean_11 = np.mean(add_10)
        add_10 = shape_of(add_10)
        neg_12 = -mean_11

        def logistic_loss_backward(b_neg_12):
            b_mean_11 = -b_neg_12
            b_add_10 = cotangent_number(divide_into(b_mean_11, reduced_size(add_10, None)))
            del b_mean_11
            b_mul_5 = uniform_unbroadcast(b_add_10, add_10, mul_5)
            b_mul_9 = uniform_unbroadcast(b_add_10, add_10, mul_9)
            del b_add_10
            b_log_8 = unbroadcast_from(array_of(b_mul_9) * sub_6, mul_9, log_8)
            del b_mul_9
            b_sub_7 = divide_into(b_log_8, sub_7)
            del b_log_8
            b_p = negative_into(b_sub_7)
            del b_sub_7
            b_log_4 = unbroadcast_from(array_of(b_mul_5) * y, mul_5, log_4)
            del b_mul_5
            b_p = add_into(b_p, divide_into(b_log_4, p))
            del b_log_4
            b_add_3 = divide_into(multiply_into(negative_into(b_p), p), add_3)
            del b_p
            b_exp_2 = b_add_3
            del b_add_3
            b_neg_1 = multiply_into(b_exp_2, exp_2)
            del b_exp_2
            b_z = negative_into(b_neg_1)
            del b_neg_1
            b_matmul_0 = unbroadcast(b_z, matmul_0)
            b_b = unbroadcast(b_z, b)
            del b_z
            b_w = matmul_vjp_b(b_matmul_0, None, x, w)
            return (b_w, b_b)
        return (neg_12, logistic_loss_backward)
    return logistic_loss_vjp
