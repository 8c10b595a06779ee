"""A user's browser, headless, for the tests of the OAuth browser step: a program to put in
``BROWSER``. ``browser(tmp_path, "follow")`` visits the authorization URL and follows the
redirect to the client's listener on 127.0.0.1; ``"deny"`` comes back refusing
(``access_denied``)."""

from __future__ import annotations

import sys
from pathlib import Path

__all__ = ["browser"]

_BROWSER = """\
#!{python}
# A user's browser, headless: it detaches (webbrowser waits for its BROWSER program to exit,
# while the client's listener only answers once it waits), then visits the authorization
# URL and goes where it is redirected ("follow"), or comes back refusing ("deny").
import http.client, os, sys
from urllib.parse import parse_qsl, urlencode, urlsplit

if os.fork():
    sys.exit(0)
quiet = os.open(os.devnull, os.O_RDWR)  # the client's pipes are not held open
for fd in (0, 1, 2):
    os.dup2(quiet, fd)

def get(url):
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=20)
    connection.request("GET", parts.path + "?" + parts.query)
    response = connection.getresponse()
    response.read()
    return response.getheader("location")

url = sys.argv[1]
if {mode!r} == "follow":
    get(get(url))
else:
    query = dict(parse_qsl(urlsplit(url).query))
    issuer = urlsplit(url)._replace(path="", query="").geturl()
    refusal = {{"error": "access_denied", "state": query["state"], "iss": issuer}}
    get(query["redirect_uri"] + "?" + urlencode(refusal))
os._exit(0)
"""


def browser(tmp_path: Path, mode: str) -> str:
    """The path of a browser program in ``tmp_path`` that does ``mode``."""
    path = tmp_path / f"browser-{mode}"
    path.write_text(_BROWSER.format(python=sys.executable, mode=mode))
    path.chmod(0o755)
    return str(path)
