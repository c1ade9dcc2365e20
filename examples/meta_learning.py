"""Meta-learning (MAML) on a toy regression: the loss after inner gradient steps,
differentiated through those steps, and Newton's method with an exact Hessian.

Run: python examples/meta_learning.py
"""
import numpy as np

import srcad


def task_loss(w, x, y):
    """Squared error of a one-hidden-unit-per-feature model on one task."""
    return np.mean((np.tanh(x @ w) - y) ** 2)


def adapted_loss(w, tasks, steps=1, rate=0.1):
    """MAML: adapt `w` to each task with a few gradient steps, then score it on the task.
    srcad differentiates through `srcad.grad(task_loss)`, so the meta-gradient sees how
    the adaptation depends on `w`."""
    total = 0.0
    for x, y in tasks:
        adapted = w
        for _ in range(steps):
            adapted = adapted - rate * srcad.grad(task_loss)(adapted, x, y)
        total = total + task_loss(adapted, x, y)
    return total / len(tasks)


def main():
    rng = np.random.default_rng(0)
    tasks = []
    for _ in range(4):
        x = rng.standard_normal((16, 3))
        tasks.append((x, np.tanh(x @ rng.standard_normal(3))))
    w = np.zeros(3)
    meta_gradient = srcad.value_and_grad(adapted_loss)
    for step in range(30):
        loss, gradient = meta_gradient(w, tasks)
        w = w - 1.0 * gradient
        if step % 10 == 0:
            print(f"meta step {step:2d}: loss after adaptation {loss:.4f}")

    # Newton's method on one task with the exact Hessian (the Jacobian of the gradient).
    x, y = tasks[0]
    v = w.copy()
    for step in range(4):
        g = srcad.grad(task_loss)(v, x, y)
        H = srcad.hessian(task_loss)(v, x, y)
        v = v - np.linalg.solve(H + 1e-6 * np.eye(3), g)
        print(f"newton step {step}: task loss {task_loss(v, x, y):.2e}")


if __name__ == "__main__":
    main()
