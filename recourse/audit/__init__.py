"""The audit: one face, or a whole folder, audited for how the compressed model's recourse
departs from the full-precision model's.

One module per part, imported where used (this package imports none of them, so that reading
one part, the paired core under the benchmark for instance, does not load the rest):

* ``paired``: both models' recourse for the same tasks and seeds, and the per-task columns;
* ``pipeline``: one face audited (:func:`recourse.audit.pipeline.audit_image`), as the app and
  ``recourse audit`` run it; ``result``: its settings and typed result; ``instruments``: the
  judges and identity it reads; ``verdict``: its verdict in plain words;
* ``edit_path``: the straight path from a face to its edit; ``stops``: the three stops on it;
  ``visible_stop``: the rule that picks the visible stop, from a stop's readings on validation
  faces (``stop_readings``); ``image_noise_floor``: below which one face's recourse size and
  direction are noise;
* ``photo_folder``, ``screening``, ``scan`` and ``scan_run``: a folder's photos framed or skipped,
  screened cheaply, the most suspicious audited in full, resumably over processes.
"""
