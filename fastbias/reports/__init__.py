"""Stage 8, reports: the text table, the self-contained HTML report, CSV/JSON and the figures.

:mod:`.report` (:class:`BiasReport`, :func:`bias_report`), :mod:`.histograms`
(binned scores for the figures) and :mod:`.plots` (the figure functions).
Imports only earlier stages.
"""
