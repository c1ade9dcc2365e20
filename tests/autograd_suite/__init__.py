"""autograd's own test suite run on srcad, through an adapter that maps autograd's public API
onto srcad's (`adapter/autograd/`): `python -m tests.autograd_suite <autograd checkout>`.
autograd's tests are autograd's code: they are not kept here (a checkout, e.g. the one
`fetch github:HIPS/autograd` brings, is passed to the script)."""
