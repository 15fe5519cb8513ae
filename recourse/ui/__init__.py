"""The audit app's parts; ``app.py`` lays the tabs out and wires their events.

One module per tab: ``audit`` (a face audited, its results and downloads), ``failures`` (faces
ranked worst first), ``benchmark`` (the committed runs) and ``your_models`` (an auditor's own
pair, local mode only). Public mode and every limit are in ``limits``, the checks that hold a
request to them in ``settings``; ``errors`` words failures without server paths, ``storage``
keeps this instance's files (its folder is claimed on import), ``texts`` holds the longer texts
and ``startup`` the app's start-up: the checks before it serves, the models loaded in the
background after. Nothing here imports ``app``.
"""
