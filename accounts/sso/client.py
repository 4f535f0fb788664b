"""The gateway as an OpenID Connect relying party: authorization code flow with PKCE.

authlib's httpx client builds the authorization URL and exchanges the code (sending the PKCE
verifier and the client's credentials); joserfc checks the ID token: signature against the
provider's published keys, issuer, audience, expiry and the nonce this sign-in sent. Discovery
and keys are fetched on first use and cached, so a replica starts while the provider is down,
and keys are fetched again once when a token names a key not seen yet (rotation).
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx
import httpx2
from authlib.integrations.base_client import OAuthError
from authlib.integrations.httpx_client import AsyncOAuth2Client
from authlib.oauth2 import OAuth2Error
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet

from accounts.sso.config import OidcSettings

_TIMEOUT = httpx.Timeout(10.0)
# Asymmetric only: an HS256 token would be checked with the client secret, which the client
# itself holds, so it proves nothing about the provider.
_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA")
# What the person's row can hold: its name is "sso:" and the person (api_keys.name is
# String(200)), its sso_subject the issuer, "#" and `sub` (String(500)).
MAX_PERSON = 196
MAX_SUBJECT = 500
_METADATA_URLS = ("authorization_endpoint", "token_endpoint", "jwks_uri")
# An OAuth error code (RFC 6749 section 5.2): shown only when it looks like one.
_ERROR_CODE = re.compile(r"[A-Za-z0-9_.\-]{1,64}")


class SignInFailed(Exception):
    """The provider or its token refused this sign-in; the message is safe to show."""


class ProviderUnavailable(SignInFailed):
    """The provider could not be reached, or answered something other than what OpenID Connect
    says it answers (a proxy's error page, a 5xx, a body that is not JSON)."""


def error_code(value: object) -> str:
    """A provider's error code as it may be shown and audited, or ``unknown``."""
    text = str(value)
    return text if _ERROR_CODE.fullmatch(text) else "unknown"


@dataclass(frozen=True, slots=True)
class PendingSignIn:
    """What the browser carries (in a cookie) from the redirect to the callback."""

    state: str
    nonce: str
    verifier: str

    def cookie(self) -> str:
        return f"{self.state}.{self.nonce}.{self.verifier}"  # url-safe tokens hold no "."

    @classmethod
    def from_cookie(cls, value: str) -> PendingSignIn | None:
        parts = value.split(".")
        return cls(*parts) if len(parts) == 3 and all(parts) else None


@dataclass(frozen=True, slots=True)
class Identity:
    subject: str  # issuer and `sub`: stable for the person at this provider
    person: str  # the configured claim (an email by default): who acts in the audit log
    groups: frozenset[str]


class OidcClient:
    def __init__(self, settings: OidcSettings, client_secret: str | None) -> None:
        self._settings = settings
        self._client_secret = client_secret
        self._metadata: dict[str, Any] | None = None
        self._keys: KeySet | None = None

    @property
    def display_name(self) -> str:
        return self._settings.display_name

    def redirect_uri(self, callback_url: str) -> str:
        return self._settings.redirect_url or callback_url

    def roles_for(self, identity: Identity) -> frozenset[str]:
        mapping = self._settings.roles_by_group
        return frozenset(role for group in identity.groups for role in mapping.get(group, ()))

    async def start(self, redirect_uri: str) -> tuple[str, PendingSignIn]:
        """The provider's authorization URL to send the browser to, and what to remember."""
        metadata = await self._discovery()
        pending = PendingSignIn(
            secrets.token_urlsafe(24), secrets.token_urlsafe(24), secrets.token_urlsafe(48)
        )
        async with self._oauth(redirect_uri) as oauth:
            url, _ = oauth.create_authorization_url(
                metadata["authorization_endpoint"],
                state=pending.state,
                code_verifier=pending.verifier,
                nonce=pending.nonce,
            )
        return str(url), pending

    async def finish(self, code: str, redirect_uri: str, pending: PendingSignIn) -> Identity:
        """Exchanges the code and checks the ID token; ``SignInFailed`` when anything is off."""
        metadata = await self._discovery()
        try:
            async with self._oauth(redirect_uri) as oauth:
                token = await oauth.fetch_token(
                    metadata["token_endpoint"], code=code, code_verifier=pending.verifier
                )
        except (OAuthError, OAuth2Error) as exc:
            # The provider's own error answer (invalid_grant for a used or made-up code...).
            reason = error_code(exc.error)
            raise SignInFailed(f"the provider refused the code (`{reason}`)") from exc
        except (httpx2.HTTPError, httpx.HTTPError, ValueError) as exc:
            # Unreachable, a 5xx, or a body that is no JSON object (authlib's ValueError).
            kind = type(exc).__name__
            raise ProviderUnavailable(f"the provider's token endpoint failed ({kind})") from exc
        id_token = token.get("id_token")
        if not isinstance(id_token, str):
            raise SignInFailed("the provider sent no ID token")
        claims = await self._verified_claims(id_token, pending.nonce)
        return self._identity(claims)

    def _identity(self, claims: dict[str, Any]) -> Identity:
        person = str(claims.get(self._settings.person_claim) or claims["sub"])
        subject = f"{self._settings.issuer}#{claims['sub']}"
        if len(person) > MAX_PERSON or len(subject) > MAX_SUBJECT:
            raise SignInFailed("the ID token names the person with too many characters")
        if "\x00" in person or "\x00" in subject:
            raise SignInFailed("the ID token names the person with a NUL character")
        if self._unverified_email(claims):
            # An unverified address may be anyone's: it must not name a person in the audit
            # log, nor match another person's SSO row.
            raise SignInFailed(f"the provider has not verified the email {person}")
        groups = claims.get(self._settings.groups_claim) or []
        if isinstance(groups, str):
            groups = [groups]
        return Identity(
            subject=subject,
            person=person,
            groups=frozenset(str(group) for group in _as_list(groups)),
        )

    def _unverified_email(self, claims: dict[str, Any]) -> bool:
        settings = self._settings
        by_email = settings.person_claim == "email" and "email" in claims
        return (
            settings.require_verified_email
            and by_email
            and claims.get("email_verified") is not True
        )

    def _oauth(self, redirect_uri: str) -> AsyncOAuth2Client:
        return AsyncOAuth2Client(
            client_id=self._settings.client_id,
            client_secret=self._client_secret,
            scope=" ".join(dict.fromkeys(["openid", *self._settings.scopes])),
            redirect_uri=redirect_uri,
            code_challenge_method="S256",
            token_endpoint_auth_method=(
                "client_secret_basic" if self._client_secret is not None else "none"
            ),
            timeout=_TIMEOUT.connect,  # authlib hands it on as a number
        )

    async def _verified_claims(self, id_token: str, nonce: str) -> dict[str, Any]:
        try:
            decoded = jwt.decode(id_token, await self._key_set(), algorithms=_ALGORITHMS)
        except (JoseError, ValueError, TypeError):
            # Perhaps a key rotated in since the keys were fetched: fetch once more.
            self._keys = None
            try:
                decoded = jwt.decode(id_token, await self._key_set(), algorithms=_ALGORITHMS)
            except JoseError as exc:
                raise SignInFailed(f"the ID token's signature is not valid ({exc.error})") from exc
            except (ValueError, TypeError) as exc:
                raise SignInFailed("the ID token is not a signed JSON Web Token") from exc
        registry = jwt.JWTClaimsRegistry(
            leeway=60,
            iss={"essential": True, "value": self._settings.issuer},
            aud={"essential": True, "value": self._settings.client_id},
            sub={"essential": True},
            exp={"essential": True},
            nonce={"essential": True, "value": nonce},
        )
        try:
            registry.validate(decoded.claims)
        except JoseError as exc:
            raise SignInFailed(f"the ID token was refused ({exc.error})") from exc
        except (ValueError, TypeError) as exc:  # a claim of the wrong type (a list for `exp`)
            raise SignInFailed("the ID token was refused (malformed claims)") from exc
        return dict(decoded.claims)

    async def _discovery(self) -> dict[str, Any]:
        if self._metadata is None:
            url = f"{self._settings.issuer}/.well-known/openid-configuration"
            metadata = await _get_json(url)
            if str(metadata.get("issuer", "")).rstrip("/") != self._settings.issuer:
                raise ProviderUnavailable("the provider's metadata names another issuer")
            if not all(isinstance(metadata.get(name), str) for name in _METADATA_URLS):
                raise ProviderUnavailable("the provider's metadata lacks an endpoint")
            self._metadata = metadata
        return self._metadata

    async def _key_set(self) -> KeySet:
        if self._keys is None:
            metadata = await self._discovery()
            published: Any = await _get_json(metadata["jwks_uri"])
            try:
                self._keys = KeySet.import_key_set(published)
            except (JoseError, LookupError, ValueError, TypeError) as exc:
                raise ProviderUnavailable("the provider publishes no usable keys") from exc
        return self._keys


def oidc_client(settings: OidcSettings | None, environ: Mapping[str, str]) -> OidcClient | None:
    """The configured client, its secret read from ``environ``; ``ValueError`` naming the
    variable when it is unset (checked when the app is made, before it serves)."""
    if settings is None:
        return None
    secret = None
    if settings.client_secret_env is not None:
        secret = environ.get(settings.client_secret_env)
        if not secret:
            raise ValueError(
                f"admin_ui.oidc.client_secret_env: the variable {settings.client_secret_env} "
                "is not set"
            )
    return OidcClient(settings, secret)


def _as_list(value: object) -> Iterable[object]:
    return value if isinstance(value, list | tuple | set | frozenset) else [value]


async def _get_json(url: str) -> dict[str, Any]:
    try:
        async with httpx.AsyncClient(timeout=_TIMEOUT) as client:
            response = await client.get(url)
            response.raise_for_status()
            body = response.json()
    except (httpx.HTTPError, ValueError) as exc:
        kind = type(exc).__name__
        raise ProviderUnavailable(f"the identity provider is unreachable ({kind})") from exc
    if not isinstance(body, dict):
        raise ProviderUnavailable("the identity provider answered with something other than JSON")
    return body
