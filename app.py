"""The attribution explorer: page config, the shared sidebar and the page router.

Run with ``streamlit run app.py``.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from ui import history, presentation, sidebar, tours
from ui.access import require_password
from ui.bundles import open_startup_bundle
from ui.runs import stop_without_results_folder

ROOT = Path(__file__).resolve().parent
PAGES = (
    ("app_pages/heatmaps.py", "Heatmaps", ":material/grid_on:"),
    ("app_pages/input_marginalization.py", "Input Marginalization", ":material/swap_horiz:"),
    ("app_pages/faithfulness.py", "Faithfulness", ":material/trending_down:"),
    ("app_pages/rationales.py", "Human rationales", ":material/person_check:"),
    ("app_pages/sanity_checks.py", "Sanity checks", ":material/shuffle:"),
    ("app_pages/adversarial.py", "Adversarial", ":material/bug_report:"),
    ("app_pages/explorer.py", "Dataset explorer", ":material/table_view:"),
    ("app_pages/reproductions.py", "Reproductions", ":material/fact_check:"),
    ("app_pages/roar.py", "Remove and retrain", ":material/model_training:"),
    ("app_pages/methods.py", "Methods", ":material/school:"),
)

# A local favicon: a Material icon name here makes the browser fetch it from fonts.gstatic.com.
st.set_page_config(page_title="Attribution explorer", page_icon=str(ROOT / "assets" / "icon.png"), layout="wide")
style = ROOT / "assets" / "style.css"
if style.is_file():
    st.html(style)
history.render()
pages = [
    st.Page(str(ROOT / path), title=title, icon=icon, default=(i == 0)) for i, (path, title, icon) in enumerate(PAGES)
]
router = st.navigation(pages)
require_password()
stop_without_results_folder()
open_startup_bundle()
sidebar.render()
presentation.render()
tours.render({path for path, _, _ in PAGES})
router.run()
