def srcad_scope(absolute_vjp, add_into, multiply_into, unbroadcast):

    def huber_if_vjp(r, delta):
        cond_0 = abs(r) <= delta
        if cond_0:
            pow_1 = r ** 2
            loss = 0.5 * pow_1
        else:
            abs_2 = abs(r)
            mul_3 = 0.5 * delta
            sub_4 = abs_2 - mul_3
            loss = delta * sub_4

        def huber_if_backward(b_loss):
            b_delta = None
            if cond_0:
                b_pow_1 = b_loss * 0.5
                b_r = multiply_into(multiply_into(b_pow_1, 2), r)
            else:
                b_delta = unbroadcast(b_loss * sub_4, delta)
                b_sub_4 = unbroadcast(b_loss * delta, sub_4)
                b_mul_3 = unbroadcast(b_sub_4, mul_3) * -0.5
                b_abs_2 = unbroadcast(b_sub_4, abs_2)
                b_delta = add_into(b_delta, b_mul_3)
                b_r = absolute_vjp(b_abs_2, abs_2, r)
            return (b_r, b_delta)
        return (loss, huber_if_backward)
    return huber_if_vjp
