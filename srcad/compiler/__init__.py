"""compiler: build time, a Python function to its compiled derivative program.

frontend (parse, fence, normalize, resolve) ─▶ analysis (activity, aliasing, shapes, tbr)
─▶ transform (reverse, forward, batched, and the optimising rewrites) ─▶ emit ─▶ cache.
`pipeline.py` lists the stages in order. It builds on the runtime (whose helpers generated
code calls), the ops and the kernels, and imports neither the API nor the tape.
"""
