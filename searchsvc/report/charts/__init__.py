"""Charts that are not sections of a study's report, each one module holding its plot data
and its drawings, as a section's module does: the web UI's progress chart of a study
(:mod:`~searchsvc.report.charts.progress`) and a campaign's best per round
(:mod:`~searchsvc.report.charts.campaign`; also the campaigns page's figure). The front doors
reach them through :mod:`searchsvc.usecases`."""
