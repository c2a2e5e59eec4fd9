"""A page that only sends its visitor to another: a meta refresh naming an address
(``<meta http-equiv="refresh" content="0; url=next.html">``; reStructuredText's ``.. meta::`` with
``:http-equiv=refresh:``). A search engine follows it and indexes where it leads, not the page
(Google reads an instant one as a permanent redirect, a delayed one as a temporary one); rustdoc
writes one for every renamed item (15,626 in Rust's documentation on this machine, each
"Redirection: Redirecting to …"), pip's docs one for every page that moved ("This page has moved").
"""

from __future__ import annotations

import re

# "0;URL=x.html", "3; url='../x/'", "5 , URL = x": a delay in whole or decimal seconds, then the address.
_REFRESH = re.compile(r"\s*(\d{1,5})(?:\.\d*)?\s*[;,]?\s*url\s*=\s*(['\"]?)(.*?)\2\s*$", re.IGNORECASE | re.DOTALL)
MOST_SECONDS = 60  # a longer wait is a page that reloads itself now and then, read as it stands


def refresh_target(content: str) -> str:
    """The address a meta refresh's ``content`` sends the visitor to, "" where it sends them
    nowhere (no address, or the page itself: "#") or only after more than :data:`MOST_SECONDS`.

    >>> refresh_target("0;URL=macro.is_x86_feature_detected.html"), refresh_target("3; url='../../cli/pip_freeze/'")
    ('macro.is_x86_feature_detected.html', '../../cli/pip_freeze/')
    >>> refresh_target("300"), refresh_target("600; url=news.html"), refresh_target("0; url=#"), refresh_target("")
    ('', '', '', '')
    """
    m = _REFRESH.match(content)
    if m is None or int(m.group(1)) > MOST_SECONDS:
        return ""
    target = m.group(3).strip()
    return "" if not target or target.startswith("#") else target
