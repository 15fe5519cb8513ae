"""Write ``docs/results/``, one page per question, from the result files under ``assets/`` (nothing typed by hand).

    python -m scripts.docs.results            # rewrite docs/results/
    python -m scripts.docs.results --check    # exit 1 if a page under docs/results/ is not up to date

``pages`` says which sections each page holds and writes the index of headline numbers; one
module per page draws its sections (``classifier``, ``quality`` with ``instruments`` and
``judges``, ``stability``, ``benchmark`` with ``primary_benchmark`` and ``default_benchmark``,
``foreign``), each from the committed files through ``files``. Each table comes with the command that made
its file, with the options that make it do so today where the defaults have changed since
(``recourse.cli.reproduction``: a run of the cone walk at margin 6 shows
``--counterfactual-method pca-walk-cone --margin 6``); the conclusions are computed from the
paired intervals, so the prose cannot drift from the numbers. Runs of other settings lie under
``assets/archive/`` (``files.ARCHIVED``) and are on no page.
"""
