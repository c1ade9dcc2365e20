def srcad_scope(add_into, expand_reduced, len, matmul_vjp_a, matmul_vjp_b, multiply_into):

    def rnn_loop_vjp(x, W):
        stack = []
        h = x
        range_0 = range(3)
        for t in range_0:
            matmul_1 = W @ h
            stack.append(h)
            h = np.tanh(matmul_1)
        stack.append(len(range_0))
        sum_2 = np.sum(h)

        def rnn_loop_backward(b_sum_2):
            nonlocal h
            b_h = expand_reduced(b_sum_2, h)
            b_W = None
            trips = stack.pop()
            for _ in range(trips):
                b_matmul_1 = multiply_into(b_h, 1.0 - h ** 2)
                h = stack.pop()
                b_W = matmul_vjp_a(b_matmul_1, None, W, h) if b_W is None else add_into(b_W, matmul_vjp_a(b_matmul_1, None, W, h))
                b_h = matmul_vjp_b(b_matmul_1, None, W, h)
            del trips
            b_x = b_h
            return (b_x, b_W)
        return (sum_2, rnn_loop_backward)
    return rnn_loop_vjp
