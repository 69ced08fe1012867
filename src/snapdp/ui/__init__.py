"""``snapdp ui``: a local web page to build a plan, see its ε and ± live, and run it
(docs/ui.md). :class:`~snapdp.ui.server.UiServer` serves the page (``static/``) on 127.0.0.1;
:mod:`snapdp.ui._workload_json` converts between the page's JSON and the plan objects."""

from __future__ import annotations

__all__: list[str] = []
