def srcad_scope(add_into, cotangent_number, multiply_into, shape_of, unbroadcast, unbroadcast_from):

    def reassigned_vjp(x, w):
        x_1 = x * w
        sin_0 = np.sin(x_1)
        x_2 = sin_0 + x_1
        sin_0 = shape_of(sin_0)
        x_3 = x_2 + 1.0
        del x_2
        x_4 = x_3 * w
        sum_1 = np.sum(x_4)
        x_4 = shape_of(x_4)

        def reassigned_backward(b_sum_1):
            b_x_4 = cotangent_number(b_sum_1)
            b_x_3 = unbroadcast_from(b_x_4 * w, x_4, x_3)
            b_w = unbroadcast_from(b_x_4 * x_3, x_4, w)
            del b_x_4
            b_x_2 = b_x_3
            del b_x_3
            b_sin_0 = unbroadcast(b_x_2, sin_0)
            b_x_1 = unbroadcast(b_x_2, x_1)
            del b_x_2
            b_x_1 = b_x_1 + b_sin_0 * np.cos(x_1)
            del b_sin_0
            b_x = unbroadcast(b_x_1 * w, x)
            b_w = add_into(b_w, unbroadcast(multiply_into(b_x_1, x), w))
            return (b_x, b_w)
        return (sum_1, reassigned_backward)
    return reassigned_vjp
