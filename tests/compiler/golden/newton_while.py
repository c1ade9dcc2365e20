def srcad_scope(add_into, len, range, unbroadcast):

    def newton_while_vjp(a):
        stack = []
        div_1 = None
        x = a
        cond_0 = abs(x * x - a) > 1e-10
        trips = len(stack)
        while cond_0:
            stack.append(div_1)
            div_1 = a / x
            add_2 = x + div_1
            stack.append(x)
            x = 0.5 * add_2
            cond_0 = abs(x * x - a) > 1e-10
        del cond_0
        stack.append((len(stack) - trips) // 2)

        def newton_while_backward(b_x):
            nonlocal div_1, x
            b_a = None
            trips = stack.pop()
            for _ in range(trips):
                b_add_2 = b_x * 0.5
                x = stack.pop()
                b_x = unbroadcast(b_add_2, x)
                b_div_1 = unbroadcast(b_add_2, div_1)
                b_a = unbroadcast(b_div_1 / x, a) if b_a is None else add_into(b_a, unbroadcast(b_div_1 / x, a))
                b_x = b_x + -unbroadcast(b_div_1 * div_1, x) / x
                div_1 = stack.pop()
            del trips
            b_a = b_x if b_a is None else add_into(b_a, b_x)
            return b_a
        return (x, newton_while_backward)
    return newton_while_vjp
