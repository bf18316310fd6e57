"""Distinctive fake secrets, planted wherever a client, an operator or an upstream can put one.

Every value contains ``PLANTED`` and is unique, so a finding names the secret and where it came from.
``findings(text)`` lists every planted secret (or its distinctive core) found in some output.
"""

from __future__ import annotations

import base64

from tests.security.shapes import PLANTED_SHAPES

# what the client sends (headers)
OPENAI_KEY = "sk-proj-PLANTEDopenaiClientKey0001"
ANTHROPIC_KEY = "sk-ant-api03-PLANTEDanthropicClientKey0002"
AZURE_KEY = "0a1b2c3d4e5fPLANTEDazure0003c4d5e6"  # Azure keys are 32 hex digits: no prefix to spot
GOOGLE_KEY = "AIzaSyPLANTEDgoogleHeaderKey0004abc"
AWS_ACCESS_KEY = "AKIAPLANTED000000005"  # AKIA + 16
AWS_SESSION_TOKEN = "FwoGZXIvYXdzEPLANTEDamzSecurityToken0006//////////"
AWS_SIGNATURE = "5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924aPLANTED7"
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."
    "eyJzdWIiOiJQTEFOVEVEand0MDAwOCIsIm5hbWUiOiJwbGFudGVkIn0."
    "PLANTEDjwtSignature0008abcdefghijk"
)
BASIC_USERPASS = "planted-user:PLANTEDbasicPassword0009"
BASIC = base64.b64encode(BASIC_USERPASS.encode()).decode()
COOKIE_VALUE = "PLANTEDcookieSession0010xyz"
ORG = "org-PLANTEDorganization0011"
PROJECT = "proj_PLANTEDproject0012"
# what the client sends (query string)
QUERY_KEY = "AIzaSyPLANTEDgoogleQueryKey0013xyz"
QUERY_API_KEY = "PLANTEDazureQueryKey0014abcdef"
QUERY_TOKEN = "PLANTEDaccessTokenQuery0015abc"
# what the client sends (JSON body)
BODY_ACCESSTOKEN = "PLANTEDbodyAccesstoken0016xyz"
USER_ID = "user_PLANTEDuserid0017_account_session"
# the operator's keys (environment variables named by routes)
ENV_ANTHROPIC = "sk-ant-api03-PLANTEDoperatorEnvKey0018"
ENV_OPENAI = "sk-proj-PLANTEDoperatorEnvKey0019"
ENV_AZURE = "9f8e7d6c5b4aPLANTEDoperatorAzure0020"

CLIENT_SECRETS = {
    "authorization bearer": OPENAI_KEY,
    "x-api-key": ANTHROPIC_KEY,
    "api-key (Azure)": AZURE_KEY,
    "x-goog-api-key": GOOGLE_KEY,
    "AWS access key id": AWS_ACCESS_KEY,
    "x-amz-security-token": AWS_SESSION_TOKEN,
    "AWS signature": AWS_SIGNATURE,
    "JWT": JWT,
    "basic credentials": BASIC,
    "basic password": BASIC_USERPASS,
    "cookie": COOKIE_VALUE,
    "openai-organization": ORG,
    "openai-project": PROJECT,
    "?key=": QUERY_KEY,
    "?api-key=": QUERY_API_KEY,
    "?access_token=": QUERY_TOKEN,
    "body accesstoken": BODY_ACCESSTOKEN,
    "metadata.user_id": USER_ID,
}
OPERATOR_SECRETS = {"env anthropic": ENV_ANTHROPIC, "env openai": ENV_OPENAI, "env azure": ENV_AZURE}
# one planted value per secret shape of the rule set (tests/security/shapes.py): the secret part of
# each, and the text that plants them all (one a line, a space after each: a base64 shape may go on
# over a line break), as a client or an upstream would write it
SHAPE_SECRETS = {f"shape {k}": secret for k, (_text, secret) in PLANTED_SHAPES.items()}
SHAPE_TEXT = " \n".join(text for text, _secret in PLANTED_SHAPES.values())
ALL = {**CLIENT_SECRETS, **OPERATOR_SECRETS, **SHAPE_SECRETS}
# Credentials (not content): what a route's host must never get from the client.
WIRE_CREDENTIALS = {
    k: v for k, v in CLIENT_SECRETS.items() if k not in ("body accesstoken", "metadata.user_id")
}


def client_headers(*, sigv4: bool = False) -> dict[str, str]:
    """Request headers carrying every kind of client credential."""
    h = {
        "authorization": f"Bearer {OPENAI_KEY}",
        "x-api-key": ANTHROPIC_KEY,
        "api-key": AZURE_KEY,
        "x-goog-api-key": GOOGLE_KEY,
        "x-amz-security-token": AWS_SESSION_TOKEN,
        "x-amz-date": "20260101T000000Z",
        "cookie": f"session={COOKIE_VALUE}; theme=dark",
        "proxy-authorization": f"Basic {BASIC}",
        "openai-organization": ORG,
        "openai-project": PROJECT,
        "x-forwarded-authorization": f"Bearer {JWT}",
    }
    if sigv4:
        h["authorization"] = (
            f"AWS4-HMAC-SHA256 Credential={AWS_ACCESS_KEY}/20260101/us-east-1/bedrock/aws4_request, "
            f"SignedHeaders=host;x-amz-date, Signature={AWS_SIGNATURE}"
        )
    return h


QUERY = f"api-version=2024-06-01&key={QUERY_KEY}&api-key={QUERY_API_KEY}&access_token={QUERY_TOKEN}"


def findings(data: str | bytes, secrets: dict[str, str] = ALL) -> list[str]:
    """The names of the planted secrets found in ``data`` (raw, or URL-quoted)."""
    from urllib.parse import quote

    if isinstance(data, bytes):
        data = data.decode("latin-1")
    return [name for name, v in secrets.items() if v in data or quote(v, safe="") in data]
