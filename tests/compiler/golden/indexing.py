def srcad_scope(add_at, cotangent_number, expand_reduced, index_adjoint, shape_of, unbroadcast):

    def indexing_vjp(x):
        first = x[0]
        tail = x[1:, ::2]
        picked = x[:, None, 1]
        pow_0 = first ** 2
        sum_1 = np.sum(pow_0)
        del pow_0
        mul_2 = tail * 3.0
        tail = shape_of(tail)
        sum_3 = np.sum(mul_2)
        del mul_2
        add_4 = sum_1 + sum_3
        sum_1 = shape_of(sum_1)
        sum_3 = shape_of(sum_3)
        sin_5 = np.sin(picked)
        sum_6 = np.sum(sin_5)
        del sin_5
        add_7 = add_4 + sum_6
        add_4 = shape_of(add_4)
        sum_6 = shape_of(sum_6)

        def indexing_backward(b_add_7):
            b_add_4 = unbroadcast(b_add_7, add_4)
            b_sum_6 = unbroadcast(b_add_7, sum_6)
            b_sin_5 = cotangent_number(b_sum_6)
            del b_sum_6
            b_picked = b_sin_5 * np.cos(picked)
            del b_sin_5
            b_sum_1 = unbroadcast(b_add_4, sum_1)
            b_sum_3 = unbroadcast(b_add_4, sum_3)
            del b_add_4
            b_mul_2 = cotangent_number(b_sum_3)
            del b_sum_3
            b_tail = expand_reduced(b_mul_2 * 3.0, tail)
            del b_mul_2
            b_pow_0 = cotangent_number(b_sum_1)
            del b_sum_1
            b_first = b_pow_0 * 2 * first
            del b_pow_0
            b_x = index_adjoint(b_picked, x, (slice(None, None), None, 1))
            del b_picked
            b_x = add_at(b_x, b_tail, x, (slice(1, None), slice(None, None, 2)))
            del b_tail
            b_x = add_at(b_x, b_first, x, 0)
            return b_x
        return (add_7, indexing_backward)
    return indexing_vjp
