def srcad_scope(cotangent_number, matmul_vjp_a, matmul_vjp_b, multiply_into, reduced_size, shape_of, unbroadcast):

    def mlp_vjp(w1, b1, w2, x):
        matmul_0 = x @ w1
        add_1 = matmul_0 + b1
        matmul_0 = shape_of(matmul_0)
        hidden = np.tanh(add_1)
        del add_1
        matmul_2 = hidden @ w2
        pow_3 = matmul_2 ** 2
        mean_4 = np.mean(pow_3)
        pow_3 = shape_of(pow_3)

        def mlp_backward(b_mean_4):
            b_pow_3 = cotangent_number(b_mean_4 / reduced_size(pow_3, None))
            b_matmul_2 = b_pow_3 * 2 * matmul_2
            del b_pow_3
            b_hidden = matmul_vjp_a(b_matmul_2, None, hidden, w2)
            b_w2 = matmul_vjp_b(b_matmul_2, None, hidden, w2)
            del b_matmul_2
            b_add_1 = multiply_into(b_hidden, 1.0 - hidden ** 2)
            del b_hidden
            b_matmul_0 = unbroadcast(b_add_1, matmul_0)
            b_b1 = unbroadcast(b_add_1, b1)
            del b_add_1
            b_w1 = matmul_vjp_b(b_matmul_0, None, x, w1)
            return (b_w1, b_b1, b_w2)
        return (mean_4, mlp_backward)
    return mlp_vjp
