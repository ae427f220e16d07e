"""The page around a report's figures (:mod:`herkit.presentation.report`): its styles, the
error banner, and Plotly's JavaScript embedded once, gzip-compressed, which the browser
unpacks with ``DecompressionStream`` before it draws the figures (about 1.4 MB in place of
Plotly's 4.8 MB, so that a report is sized mostly by what it shows)."""

from __future__ import annotations

import base64
import functools
import gzip
import re

from plotly.offline import get_plotlyjs

__all__ = ["PAGE", "deferred_scripts", "html_page"]

DEFERRED = "text/x-herkit-plot"
"""The type of a figure's script: run once Plotly is unpacked, not as the page loads."""


def html_page(title: str, body: str) -> str:
    """The whole page: ``title`` (escaped HTML) and ``body`` (the figures' HTML)."""
    return PAGE.format(title=title, plotly=packed_plotly(), body=body, deferred=DEFERRED)


def deferred_scripts(figure: str) -> str:
    """A figure's HTML with its scripts left for the page to run once Plotly is there."""
    return re.sub(r'<script(\s+type="text/javascript")?>', f'<script type="{DEFERRED}">', figure)


@functools.cache
def packed_plotly() -> str:
    """Plotly's JavaScript, gzip-compressed and base64-encoded (made once per process)."""
    packed = gzip.compress(get_plotlyjs().encode(), compresslevel=9, mtime=0)
    return base64.b64encode(packed).decode("ascii")


PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 20px; color: #222; background: #fafafa; }}
h1 {{ font-size: 22px; margin: 0 0 6px; word-break: break-all; }} .facts {{ font-size: 15px; }}
h2 {{ font-size: 18px; margin: 26px 0 8px; border-bottom: 1px solid #ddd; }}
.help {{ color: #666; font-size: 13px; }} tr.differs td {{ background: #fff4c2; }}
.grid {{ display: grid; grid-template-columns: repeat(auto-fill, minmax(560px, 1fr)); gap: 12px; }}
.panel {{ background: #fff; border: 1px solid #ddd; border-radius: 6px; min-width: 0;
          overflow: hidden; }} .note {{ padding: 16px; color: #555; background: #f3f3f3; }}
.panel h3 {{ font-size: 15px; margin: 10px 12px 0; }} th {{ background: #eee; }}
table {{ border-collapse: collapse; font-size: 13px; background: #fff; }}
td, th {{ border: 1px solid #ddd; padding: 3px 8px; text-align: left; vertical-align: top; }}
td {{ word-break: break-word; max-width: 520px; }}
#report-errors {{ background: #fde8e8; border: 2px solid #c62828; color: #8e0000; padding: 10px;
                 white-space: pre-wrap; margin-bottom: 12px; }}
#report-errors:empty, #report-errors[hidden] {{ display: none; }}
</style></head>
<body>
<div id="report-errors" hidden></div>
<script>
(function () {{
  var box = document.getElementById("report-errors");
  function show(text) {{
    box.hidden = false;
    box.textContent += (box.textContent ? "\\n" : "JavaScript error: ") + text;
  }}
  window.addEventListener("error", function (e) {{
    show((e.message || "error") + (e.filename ? " (" + e.filename + ":" + e.lineno + ")" : ""));
  }});
  window.addEventListener("unhandledrejection", function (e) {{
    show("unhandled rejection: " + ((e.reason && e.reason.message) || e.reason)); }});
  window.herkitShow = show;
}})();
</script>
<script type="application/gzip;base64" id="plotly-gzip">{plotly}</script>
{body}
<script>
(async function () {{
  var packed = document.getElementById("plotly-gzip").textContent;
  var bytes = Uint8Array.from(atob(packed), function (c) {{ return c.charCodeAt(0); }});
  if (typeof DecompressionStream === "undefined") {{
    window.herkitShow("this browser cannot unpack Plotly (no DecompressionStream): open " +
                      "the report in a current Chrome, Firefox, Edge or Safari");
    return;
  }}
  var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  var library = document.createElement("script");
  library.textContent = await new Response(stream).text();
  document.head.appendChild(library);  // runs at once, in the page's global scope
  if (typeof Plotly === "undefined") {{ window.herkitShow("Plotly did not load"); return; }}
  document.querySelectorAll('script[type="{deferred}"]').forEach(function (figure) {{
    var run = document.createElement("script");
    run.textContent = figure.textContent;
    figure.replaceWith(run);
  }});
  var blank = document.querySelectorAll(".plotly-graph-div:not(.js-plotly-plot)").length;
  if (blank) window.herkitShow(blank + " figure(s) were not drawn");
}})().catch(function (e) {{ window.herkitShow("unpacking Plotly failed: " + e); }});
</script>
</body></html>
"""
