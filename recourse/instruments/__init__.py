"""Instruments that judge counterfactuals and never guide them: identity (dlib face
descriptor: FVA, FS) and realism (oracle-feature FD and KID with a real-versus-real floor, a
real-versus-edited discriminator). Defined in ``docs/metrics.md``; each module's functions
are pure (the dlib models are loaded once and only read).
"""
