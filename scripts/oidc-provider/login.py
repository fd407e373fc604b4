#!/usr/bin/env python3
"""Browser-free authorization-code login against the test OIDC provider.

Usage: login.py AUTHORIZATION_URL LOGIN PASSWORD

AUTHORIZATION_URL is the URL a relying party sends the browser to
(<issuer>/auth?client_id=...&redirect_uri=...&state=...&nonce=...&code_challenge=...).
The script follows the provider's redirects with its own cookie jar, submits
the login form, then the consent form, and stops at the redirect to the
client's redirect_uri: it prints that URL (with code, state, iss) on stdout
and does NOT fetch it. Exit 1, with a message on stderr, on any failure
(wrong password, an error redirect, an unexpected page).

Standard library only; this is the reference for the Rust tests' scripted login.
"""

import html.parser
import http.cookiejar
import sys
import urllib.error
import urllib.parse
import urllib.request

MAX_STEPS = 12


class Fail(Exception):
    pass


class NoRedirect(urllib.request.HTTPRedirectHandler):
    """Make 3xx responses come back as HTTPError so each hop is handled here."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


class PageParser(html.parser.HTMLParser):
    """Collects forms (action, method, inputs) and the page's visible text."""

    def __init__(self):
        super().__init__()
        self.forms = []
        self.text = []
        self.errors = []  # text of elements with class="error"
        self._skip = 0
        self._error = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "form":
            self.forms.append({"action": a.get("action") or "", "method": (a.get("method") or "get").lower(), "inputs": {}})
        elif tag == "input" and self.forms and a.get("name"):
            self.forms[-1]["inputs"][a["name"]] = a.get("value") or ""
        elif tag in ("script", "style"):
            self._skip += 1
        if "error" in (a.get("class") or "").split():
            self._error = tag

    def handle_endtag(self, tag):
        if tag in ("script", "style") and self._skip:
            self._skip -= 1
        if tag == self._error:
            self._error = None

    def handle_data(self, data):
        if not self._skip and data.strip():
            self.text.append(data.strip())
            if self._error:
                self.errors.append(data.strip())


def origin(url):
    p = urllib.parse.urlsplit(url)
    return (p.scheme, p.netloc)


def fetch(opener, url, form=None):
    """One HTTP request without following redirects: (status, headers, body)."""
    data = urllib.parse.urlencode(form).encode() if form is not None else None
    req = urllib.request.Request(url, data=data, method="POST" if form is not None else "GET")
    try:
        with opener.open(req, timeout=15) as resp:
            return resp.status, resp.headers, resp.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as err:
        return err.code, err.headers, err.read().decode("utf-8", "replace")
    except urllib.error.URLError as err:
        raise Fail(f"cannot reach {url}: {err.reason}")


def login(auth_url, username, password):
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(auth_url).query)
    redirect_uri = query.get("redirect_uri", [None])[0]
    provider_origin = origin(auth_url)
    opener = urllib.request.build_opener(
        urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()), NoRedirect())

    url, form, submitted = auth_url, None, set()
    for _ in range(MAX_STEPS):
        status, headers, body = fetch(opener, url, form)
        form = None

        if status in (301, 302, 303, 307, 308):
            location = urllib.parse.urljoin(url, headers.get("Location", ""))
            at_client = (redirect_uri and location.split("?")[0].split("#")[0] == redirect_uri) \
                or origin(location) != provider_origin
            if at_client:
                params = urllib.parse.parse_qs(urllib.parse.urlsplit(location).query)
                if "error" in params:
                    raise Fail(f"provider redirected with an error: {location}")
                if "code" not in params:
                    raise Fail(f"redirect to the client has no code: {location}")
                return location
            url = location
            continue

        page = PageParser()
        page.feed(body)
        text = " ".join(page.errors or page.text)[:500]
        if status == 401 and "login" in submitted:
            raise Fail(f"login rejected for {username!r} (HTTP 401): {text}")
        if status != 200:
            raise Fail(f"HTTP {status} from {url}: {text}")

        post_forms = [f for f in page.forms if f["method"] == "post"]
        if not post_forms:
            raise Fail(f"no form on the page at {url}: {text}")
        chosen = post_forms[0]
        fields = dict(chosen["inputs"])
        prompt = fields.get("prompt", "")
        if "password" in fields:
            if "login" in submitted:
                raise Fail(f"login form shown again for {username!r}: {text}")
            fields["login"], fields["password"] = username, password
            submitted.add("login")
        elif prompt == "consent":
            if "consent" in submitted:
                raise Fail(f"consent form shown twice: {text}")
            submitted.add("consent")
        else:
            raise Fail(f"unexpected form (prompt={prompt!r}) at {url}: {text}")
        url, form = urllib.parse.urljoin(url, chosen["action"] or url), fields

    raise Fail(f"no redirect to the client after {MAX_STEPS} requests")


def main(argv):
    if len(argv) != 4:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    try:
        print(login(argv[1], argv[2], argv[3]))
    except Fail as err:
        print(f"login.py: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
