"""The pages of the app: a file each, named below on a line each, in menu order (the first opens by default).

Adding a page is a file here and its name below. The file declares ``PAGE = PageSpec(title, icon, params)``
(``rl_board/ui/state.py``): its menu entry and the URL parameters only it reads, written with literals, since
the router and the URL state read it from the file's text. The rest of the file draws the page: Streamlit
runs it as a script at ``/<name>``. This module imports nothing, so the view state may read it.
"""

PAGES = (
    "overview",
    "steps",
    "sample",
    "groups",
    "prompts",
    "matchup",
    "tools",
    "patterns",
    "metrics",
    "health",
    "query",
)
