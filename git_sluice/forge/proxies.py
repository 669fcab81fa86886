"""Which proxy, if any, a call to an endpoint goes through: the environment's ``*_proxy`` variables, read as curl reads them.

A fleet behind a corporate proxy sets ``https_proxy`` once for every tool on
the host; git, curl, gh and pip honour it, so git-sluice must too, or its
calls fail where everything else works (and an App token minted through
httpx's own client went through the proxy while the calls it paid for did
not). The rules, in curl's order:

- ``https_proxy`` for an https endpoint, ``http_proxy`` for an http one, then
  ``all_proxy``; the lower-case name wins over the upper-case one. Upper-case
  ``HTTP_PROXY`` is ignored when ``REQUEST_METHOD`` is set (a CGI process,
  where a request header can set it: "httpoxy").
- ``no_proxy`` lists hosts that go direct: ``*`` for all; a name matches
  itself and every name under it (``example.com`` and ``.example.com`` both
  cover ``api.example.com``); an entry may carry ``:port``; an IP address or
  a CIDR block (``10.0.0.0/8``) matches the endpoint's literal address.
- A proxy written without a scheme is ``http://``. Only ``http://`` and
  ``https://`` proxies are accepted: anything else is a :class:`ProxySetting`
  error (exit 2) naming the variable, never its credentials.

Pure: the environment comes in as a mapping, so every rule is tested without
touching the process's own.
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlsplit

from ..errors import ProxySetting as ProxySetting

ACCEPTED = ProxySetting.ACCEPTED


def redact(value: str) -> str:
    """The proxy URL with any ``user:password@`` replaced: what an error message may show."""
    scheme, sep, rest = value.partition("://")
    if not sep:
        scheme, rest = "", value
    at = rest.rfind("@", 0, _authority_end(rest))
    if at < 0:
        return value
    return f"{scheme}{sep}***@{rest[at + 1:]}"


def _authority_end(rest: str) -> int:
    ends = [i for i in (rest.find("/"), rest.find("?"), rest.find("#")) if i >= 0]
    return min(ends) if ends else len(rest)


def _variable(env: Mapping[str, str], scheme: str) -> tuple[str, str] | None:
    """(name, value) of the first non-empty variable that names a proxy for ``scheme``."""
    names = [f"{scheme}_proxy", f"{scheme.upper()}_PROXY"]
    if scheme == "http" and env.get("REQUEST_METHOD"):
        names = names[:1]  # httpoxy: in a CGI process HTTP_PROXY may come from a request header
    for name in names:
        value = env.get(name, "").strip()
        if value:
            return name, value
    return None


def bypassed(host: str, port: int, no_proxy: str) -> bool:
    """True when ``no_proxy`` sends ``host:port`` direct."""
    host = host.strip("[]").rstrip(".").lower()
    for raw in no_proxy.split(","):
        entry = raw.strip().lower()
        if not entry:
            continue
        if entry == "*":
            return True
        entry_port: int | None = None
        if entry.startswith("["):  # [::1] or [::1]:8080
            inside, _, after = entry[1:].partition("]")
            entry = inside
            if after.startswith(":") and after[1:].isdigit():
                entry_port = int(after[1:])
        elif entry.count(":") == 1:
            name, _, maybe_port = entry.partition(":")
            if maybe_port.isdigit():
                entry, entry_port = name, int(maybe_port)
        if entry_port is not None and entry_port != port:
            continue
        if _address_match(host, entry):
            return True
        entry = entry.lstrip(".").rstrip(".")
        if entry and (host == entry or host.endswith("." + entry)):
            return True
    return False


def _address_match(host: str, entry: str) -> bool:
    """An IP literal host against an address or CIDR entry; False for names (never resolved: no DNS here)."""
    if not any(c.isdigit() for c in host) or not any(c.isdigit() for c in entry):
        return False
    import ipaddress

    try:
        address = ipaddress.ip_address(host)
        network = ipaddress.ip_network(entry, strict=False)
    except ValueError:
        return False
    return address.version == network.version and address in network


def proxy_for(endpoint: str, env: Mapping[str, str]) -> str | None:
    """The proxy URL that calls to ``endpoint`` go through, or None to go direct."""
    return route(endpoint, env)[1]


def route(endpoint: str, env: Mapping[str, str]) -> tuple[str | None, str | None]:
    """(the variable that decided, the proxy URL or None): ``doctor`` says which way calls go and why."""
    parts = urlsplit(endpoint)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        return None, None
    found = _variable(env, scheme) or _variable(env, "all")
    if found is None:
        return None, None
    no_proxy_name = "no_proxy" if env.get("no_proxy") else "NO_PROXY"
    no_proxy = env.get(no_proxy_name) or ""
    try:
        port = parts.port or (443 if scheme == "https" else 80)
    except ValueError:
        port = 443 if scheme == "https" else 80
    if bypassed(parts.hostname or "", port, no_proxy):
        return no_proxy_name, None
    name, value = found
    return name, checked(name, value)


def checked(name: str, value: str) -> str:
    """``value`` as a proxy URL httpx can use (a bare ``host:port`` is http), or :class:`ProxySetting`."""
    url = value if "://" in value else f"http://{value}"
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("http", "https"):
        raise ProxySetting(name, redact(value), f"a {parts.scheme}:// proxy is not supported")
    try:
        parts.port
    except ValueError:
        raise ProxySetting(name, redact(value), "the port is not a number from 0 to 65535") from None
    if not parts.hostname:
        raise ProxySetting(name, redact(value), "no proxy host is named")
    return url
