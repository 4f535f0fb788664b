"""An OpenID provider on 127.0.0.1 whose token endpoint answers what a test tells it to: the
errors and broken answers a real provider (tests/support/oidc_provider.py) never gives on
purpose. Discovery and keys are real; the ID tokens it signs carry the nonce the gateway sent."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from joserfc import jwt
from joserfc.jwk import ECKey
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.support.servers import serve

CLIENT_ID = "gateway"
# Nothing listens on the discard port: a token endpoint there is unreachable.
UNREACHABLE = "http://127.0.0.1:9/token"

TokenAnswer = Callable[["ScriptedOidc"], Response]


@dataclass
class ScriptedOidc:
    issuer: str = ""
    key: ECKey = field(default_factory=lambda: ECKey.generate_key("P-256", {"kid": "k1"}))
    token_endpoint: str = ""
    answer: TokenAnswer | None = None
    nonce: str = ""  # the nonce of the sign-in under way (the test reads it from the redirect)
    codes: list[str] = field(default_factory=list)  # the codes the gateway exchanged

    def id_token(self, key: ECKey | None = None, **claims: Any) -> str:
        now = int(time.time())
        standard = {
            "iss": self.issuer,
            "aud": CLIENT_ID,
            "sub": "alice",
            "iat": now,
            "exp": now + 300,
            "nonce": self.nonce,
            "email": "alice@example.com",
            "email_verified": True,
            "groups": ["gateway-admins"],
        }
        signer = key or self.key
        header = {"alg": "ES256", "kid": signer.kid or "k1"}
        return jwt.encode(header, {**standard, **claims}, signer)

    def app(self) -> Starlette:
        async def discovery(request: Request) -> Response:
            return JSONResponse(
                {
                    "issuer": self.issuer,
                    "authorization_endpoint": f"{self.issuer}/authorize",
                    "token_endpoint": self.token_endpoint or f"{self.issuer}/token",
                    "jwks_uri": f"{self.issuer}/jwks",
                }
            )

        async def jwks(request: Request) -> Response:
            return JSONResponse({"keys": [self.key.as_dict(private=False)]})

        async def token(request: Request) -> Response:
            form = await request.form()
            self.codes.append(str(form.get("code")))
            if self.answer is None:
                return JSONResponse({"error": "invalid_grant"}, status_code=400)
            return self.answer(self)

        routes = [
            Route("/.well-known/openid-configuration", discovery),
            Route("/jwks", jwks),
            Route("/token", token, methods=["POST"]),
        ]
        return Starlette(routes=routes)


@contextmanager
def scripted_oidc(token_endpoint: str = "") -> Iterator[ScriptedOidc]:
    """``token_endpoint``: where its metadata says the token endpoint is (default: its own)."""
    provider = ScriptedOidc(token_endpoint=token_endpoint)
    with serve(provider.app()) as url:
        provider.issuer = url
        yield provider
