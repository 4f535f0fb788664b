"""Whose X-Forwarded-For and X-Forwarded-Proto the gateway believes (`forwarded_allow_ips`).

uvicorn's ``ProxyHeadersMiddleware`` applies them, once, outermost in the app: when the peer is
one of the configured proxies, the client is the rightmost address of ``X-Forwarded-For`` that
no configured proxy added (anything left of it the client may have written itself) and the scheme
is the proxy's ``X-Forwarded-Proto``; from any other peer both headers are ignored. Everything
after it reads ``request.client.host`` (the sign-in throttle, the audit's ``client``) and the
scheme (the admin cookies' ``Secure``). uvicorn's own handling of the headers is off
(``proxy_headers=False`` in ``server/serve.py``): it would trust 127.0.0.1, or whatever
``FORWARDED_ALLOW_IPS`` says, before the gateway's setting is read.
"""

from __future__ import annotations

import ipaddress


def proxy_networks(entries: list[str]) -> list[str]:
    """The entries as uvicorn matches them (an address, or a network whose host bits are
    cleared); ``ValueError`` naming the first that is neither."""
    networks = []
    for entry in entries:
        text = entry.strip()
        try:
            if "/" in text:
                networks.append(str(ipaddress.ip_network(text, strict=False)))
            else:
                networks.append(str(ipaddress.ip_address(text)))
        except ValueError:
            raise ValueError(
                f"`{entry}` is not an IP address or a CIDR network (a `*` is refused: any "
                "client could then name its own address)"
            ) from None
    return networks
