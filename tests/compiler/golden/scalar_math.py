def srcad_scope(add_into, multiply_into, shape_of, unbroadcast):

    def scalar_math_vjp(x, y):
        mul_0 = x * y
        div_1 = x / y
        add_2 = mul_0 + div_1
        mul_0 = shape_of(mul_0)
        pow_3 = y ** 3
        sub_4 = add_2 - pow_3
        add_2 = shape_of(add_2)
        pow_3 = shape_of(pow_3)
        neg_5 = -x
        add_6 = sub_4 + neg_5
        neg_5 = shape_of(neg_5)
        sub_4 = shape_of(sub_4)

        def scalar_math_backward(b_add_6):
            b_sub_4 = unbroadcast(b_add_6, sub_4)
            b_neg_5 = unbroadcast(b_add_6, neg_5)
            b_x = -b_neg_5
            del b_neg_5
            b_add_2 = unbroadcast(b_sub_4, add_2)
            b_pow_3 = unbroadcast(b_sub_4, pow_3) * -3
            del b_sub_4
            b_y = multiply_into(b_pow_3, y ** 2)
            del b_pow_3
            b_mul_0 = unbroadcast(b_add_2, mul_0)
            b_div_1 = unbroadcast(b_add_2, div_1)
            del b_add_2
            b_x = add_into(b_x, unbroadcast(b_div_1 / y, x))
            b_y = add_into(b_y, -unbroadcast(b_div_1 * div_1, y) / y)
            del b_div_1
            b_x = add_into(b_x, unbroadcast(b_mul_0 * y, x))
            b_y = add_into(b_y, unbroadcast(b_mul_0 * x, y))
            return (b_x, b_y)
        return (add_6, scalar_math_backward)
    return scalar_math_vjp
