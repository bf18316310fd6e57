"""One planted value per secret shape of ``proxai/safety/secret_shapes.toml`` (synthetic, shaped like the
real thing, never a real secret), and the ordinary words and LLM API ids that must stay whole.

``PLANTED_SHAPES[id] = (text, secret)``: ``text`` is what is planted (the secret, with the context its
rule needs: the keyword of a keyword-gated rule, ``Bearer``, ``Basic``), ``secret`` is the part that
must be removed; the rest of ``text`` must stay. Made from each rule's regex (its shortest form, the
characters of each class picked by a seeded generator) and checked against the rule once.
"""

from __future__ import annotations

# ruff: noqa: E501

_SIGV4 = (
    "AWS4-HMAC-SHA256 Credential=AKIAPLANTEDSHAPE0002/20260101/us-east-1/bedrock/aws4_request, "
    "SignedHeaders=host;x-amz-date, Signature=4e6a2b9c0d1f3a5b7c9e1f2a4b6c8d0e2f4a6b8c0d2e4f6a8b0c2d4e6f8a0b2c"
)

PLANTED_SHAPES: dict[str, tuple[str, str]] = {
    "1password-secret-key": (
        "A3-HUGXYL-W3O6HAD9H6W-GM240-DJ3RB-O7Z7D",
        "A3-HUGXYL-W3O6HAD9H6W-GM240-DJ3RB-O7Z7D",
    ),
    "1password-service-account-token": (
        "ops_eyJ6Xz49AHE91F0germ1EXrg0k6025C6w5hY5AcBjdQggSAlqZ3sgDAJP5pQws7OiAxA7OyPYaS5SI8l4ViXftli0nFpfVqHAyZSMWW6QojwggiYkYciayPRnYzVnl0vou7yuspzyqsi7j1MsyKgFCzufmbQ2ewZet2BucR2AXnW8OeYyfJ7oZNzDoMDCSA1wMW4eoVFkslMCV8NfhNyEc4VtalLBma32O0NJm6IoPZRgtetOGXkFbLqXXpbf",
        "ops_eyJ6Xz49AHE91F0germ1EXrg0k6025C6w5hY5AcBjdQggSAlqZ3sgDAJP5pQws7OiAxA7OyPYaS5SI8l4ViXftli0nFpfVqHAyZSMWW6QojwggiYkYciayPRnYzVnl0vou7yuspzyqsi7j1MsyKgFCzufmbQ2ewZet2BucR2AXnW8OeYyfJ7oZNzDoMDCSA1wMW4eoVFkslMCV8NfhNyEc4VtalLBma32O0NJm6IoPZRgtetOGXkFbLqXXpbf",
    ),
    "adafruit-api-key": ("adafruit=u9svhz5g20jgyttmlnep15xvknnohsul", "u9svhz5g20jgyttmlnep15xvknnohsul"),
    "adobe-client-id": ("adobe=b0bc8ca15c265c6a448d2e24ba9aee79", "b0bc8ca15c265c6a448d2e24ba9aee79"),
    "adobe-client-secret": ("p8e-uxtvji1xjfofi7q0e4fpzyhgo1p48daz", "p8e-uxtvji1xjfofi7q0e4fpzyhgo1p48daz"),
    "age-secret-key": (
        "AGE-SECRET-KEY-19DJ23J38FNUKF337670AUFH8JQSMARCT8NT9WS04TTEPEL3ELVHRDUA8DZ",
        "AGE-SECRET-KEY-19DJ23J38FNUKF337670AUFH8JQSMARCT8NT9WS04TTEPEL3ELVHRDUA8DZ",
    ),
    "airtable-api-key": ("airtable=fgjp7kafbajcg43he", "fgjp7kafbajcg43he"),
    "airtable-personnal-access-token": (
        "airtable patIKTmTcjWZigXHz.ec5e40522623e87ae1d1d9ca3806f071e0f9ac2a35948d2d50214dc766c4a0d2",
        "patIKTmTcjWZigXHz.ec5e40522623e87ae1d1d9ca3806f071e0f9ac2a35948d2d50214dc766c4a0d2",
    ),
    "algolia-api-key": ("algolia=qbxv04ji7ltqc1n39zoe1xnu7mh0d9ee", "qbxv04ji7ltqc1n39zoe1xnu7mh0d9ee"),
    "alibaba-access-key-id": ("LTAIeve09gq75qjcj8thqktg", "LTAIeve09gq75qjcj8thqktg"),
    "alibaba-secret-key": ("alibaba=3chuu07ru7utppe2nl2hxycn16gsyo", "3chuu07ru7utppe2nl2hxycn16gsyo"),
    "anthropic-admin-api-key": (
        "sk-ant-admin01-lTrHaRKUUEVmDgOzy9PZ0qm8LbNuNqFdIcfpinKgUyFPrIvsggvUFPeMq61U2Kv1DjsnjhbA4mPegy0qL0hqXe8AAL0x2AA",
        "sk-ant-admin01-lTrHaRKUUEVmDgOzy9PZ0qm8LbNuNqFdIcfpinKgUyFPrIvsggvUFPeMq61U2Kv1DjsnjhbA4mPegy0qL0hqXe8AAL0x2AA",
    ),
    "anthropic-api-key": (
        "sk-ant-api03-FvxwszInLEozzDvkiFuumpUZLMFt4VU3GAMW8zuQUT8wpxDdJPKP076oJMZ6q2WvG5KnHVEeWEUpEseUhiXyziUpLm4CZAA",
        "sk-ant-api03-FvxwszInLEozzDvkiFuumpUZLMFt4VU3GAMW8zuQUT8wpxDdJPKP076oJMZ6q2WvG5KnHVEeWEUpEseUhiXyziUpLm4CZAA",
    ),
    "artifactory-api-key": (
        "AKCpODvzfZUINw2RURBvsbBNiQTW4CHk5QVaLbBgypGBmsEN5mjEhTHXHLZYA7nrctY5O4NCy",
        "AKCpODvzfZUINw2RURBvsbBNiQTW4CHk5QVaLbBgypGBmsEN5mjEhTHXHLZYA7nrctY5O4NCy",
    ),
    "artifactory-reference-token": (
        "cmVmdgskVZWjhhcUqAJrLGHwjDYnzy6go3C5gqcb7D4l63X1Z0eOwAWFmXulGa3U",
        "cmVmdgskVZWjhhcUqAJrLGHwjDYnzy6go3C5gqcb7D4l63X1Z0eOwAWFmXulGa3U",
    ),
    "asana-client-id": ("asana=6150070215845820", "6150070215845820"),
    "asana-client-secret": ("asana=if4xu4ju6wsrl1n13sph0yp8hejqbfhx", "if4xu4ju6wsrl1n13sph0yp8hejqbfhx"),
    "atlassian-api-token": ("ATLASSIAN=iwqi57i3i7x2p84sklxi8049;", "iwqi57i3i7x2p84sklxi8049"),
    "authress-service-client-access-key": (
        "sc_cm66t.7ns5.acc_hsf9700ydl.b5ppej76dh81nd6mnjpcqhg31qrm6u",
        "sc_cm66t.7ns5.acc_hsf9700ydl.b5ppej76dh81nd6mnjpcqhg31qrm6u",
    ),
    "aws-access-token": ("A3TWSOLFH4D3436FZBL7", "A3TWSOLFH4D3436FZBL7"),
    "aws-amazon-bedrock-api-key-long-lived": (
        "ABSKeqUdN9kMwI8soXS6z3AlDLlnPm3ioWPPj1qaS2tbFIklOIzmQRbSakNZCmuAEqRSFn7tqW5q1IgmA4UPf2Bx3ulQPGTlI5pbPbTc1xiYrZMFi",
        "ABSKeqUdN9kMwI8soXS6z3AlDLlnPm3ioWPPj1qaS2tbFIklOIzmQRbSakNZCmuAEqRSFn7tqW5q1IgmA4UPf2Bx3ulQPGTlI5pbPbTc1xiYrZMFi",
    ),
    "aws-amazon-bedrock-api-key-short-lived": (
        "bedrock-api-key-YmVkcm9jay5hbWF6b25hd3MuY29t",
        "bedrock-api-key-YmVkcm9jay5hbWF6b25hd3MuY29t",
    ),
    "azure-ad-client-secret": (
        "0xw6Q~gDtCFCyHcz55NdNOP93zQ4U8oOqhpy7",
        "0xw6Q~gDtCFCyHcz55NdNOP93zQ4U8oOqhpy7",
    ),
    "beamer-api-token": (
        "beamer=b_l1yk0j5gi2i9yst3asj81cq8kovxqt1c6k0jf0847mmz",
        "b_l1yk0j5gi2i9yst3asj81cq8kovxqt1c6k0jf0847mmz",
    ),
    "bitbucket-client-id": ("bitbucket=2qfekxfv9db16t4c7gkzqmrk0denjce2", "2qfekxfv9db16t4c7gkzqmrk0denjce2"),
    "bitbucket-client-secret": (
        "bitbucket=xqe1zad2srqirziye03hj88cuzo5zpljmtc4gxff7v1fu732e5vthc0mlt43vo26",
        "xqe1zad2srqirziye03hj88cuzo5zpljmtc4gxff7v1fu732e5vthc0mlt43vo26",
    ),
    "bittrex-access-key": ("bittrex=v2a571djpsespn3h8cibx5iuqsbsvvl0", "v2a571djpsespn3h8cibx5iuqsbsvvl0"),
    "bittrex-secret-key": ("bittrex=lvfl1uqt5x7bp7ka0b58j20dl2is5y59", "lvfl1uqt5x7bp7ka0b58j20dl2is5y59"),
    "cisco-meraki-api-key": (
        "Meraki=bb849961ac634d5ce5d95cfd453b49a44ae9ee12",
        "bb849961ac634d5ce5d95cfd453b49a44ae9ee12",
    ),
    "clickhouse-cloud-api-secret-key": (
        "4b1dbjHIKgcdyEcgeX1QFcXbNjACcYnffcGL3EhB0L",
        "4b1dbjHIKgcdyEcgeX1QFcXbNjACcYnffcGL3EhB0L",
    ),
    "clojars-api-token": (
        "CLOJARS_bonw2zlr15s1bldykav8u40hm6r8gk5yrcdmefw9p5dj71us89ob165bp2pf",
        "CLOJARS_bonw2zlr15s1bldykav8u40hm6r8gk5yrcdmefw9p5dj71us89ob165bp2pf",
    ),
    "cloudflare-api-key": (
        "cloudflare=zokvkq6l7zmwi93z8hqbo0tusj4carhsi6zrfhed",
        "zokvkq6l7zmwi93z8hqbo0tusj4carhsi6zrfhed",
    ),
    "cloudflare-global-api-key": (
        "cloudflare=4765072028d2eee2a2350be8a12e86a54a2a7",
        "4765072028d2eee2a2350be8a12e86a54a2a7",
    ),
    "cloudflare-origin-ca-key": (
        "v1.0-909a40872c272099c3ea2732-08136db889102ebb9102923bf1cf96276c650932ada299c8b55d54daa08a8419f966046d3d57d5442e6042bd0b3c1e1cd12aa9197c1849f0398ab7859d73d6e67b1f62dc39ab5d3372",
        "v1.0-909a40872c272099c3ea2732-08136db889102ebb9102923bf1cf96276c650932ada299c8b55d54daa08a8419f966046d3d57d5442e6042bd0b3c1e1cd12aa9197c1849f0398ab7859d73d6e67b1f62dc39ab5d3372",
    ),
    "codecov-access-token": ("codecov=6qcppwlp9nrgq2i8x5wb5dufelr4yc4u", "6qcppwlp9nrgq2i8x5wb5dufelr4yc4u"),
    "cohere-api-token": (
        "cohere=ZFrgxpz3bAVdOOJNY7LR6eYBT3PJuHXaeNNP40D8",
        "ZFrgxpz3bAVdOOJNY7LR6eYBT3PJuHXaeNNP40D8",
    ),
    "coinbase-access-token": (
        "coinbase=ggqw7kn12xt3crw925t7ata0vxtrpi275k17u0q70l8i0puvify1mqdg4rydji4m",
        "ggqw7kn12xt3crw925t7ata0vxtrpi275k17u0q70l8i0puvify1mqdg4rydji4m",
    ),
    "confluent-access-token": ("confluent=halv44tcpeolffi6", "halv44tcpeolffi6"),
    "confluent-secret-key": (
        "confluent=kzcl0taamx3r69tg0bxjm65itzgi8d46zm36qy54aidczwyksjnsz8tj63nwxj1h",
        "kzcl0taamx3r69tg0bxjm65itzgi8d46zm36qy54aidczwyksjnsz8tj63nwxj1h",
    ),
    "contentful-delivery-api-token": (
        "contentful=9cvn9ku5s50n7md8plcep1lrqtxazh8b8cuaupp9w9d",
        "9cvn9ku5s50n7md8plcep1lrqtxazh8b8cuaupp9w9d",
    ),
    "databricks-api-token": ("dapi31430d1d5e335dd6208290b301c239b9", "dapi31430d1d5e335dd6208290b301c239b9"),
    "datadog-access-token": (
        "datadog=bon9buedgtq1g78hhpr8k7kczlm0rca7na22n2mb",
        "bon9buedgtq1g78hhpr8k7kczlm0rca7na22n2mb",
    ),
    "defined-networking-api-token": (
        "dnkey=dnkey-pfcc97q2v420giiehma70ngpq0-c8h93vh1gxaoi4el1k58gh0562b46ss3in0wbie6rexmh13bh6ii",
        "dnkey-pfcc97q2v420giiehma70ngpq0-c8h93vh1gxaoi4el1k58gh0562b46ss3in0wbie6rexmh13bh6ii",
    ),
    "digitalocean-access-token": (
        "doo_v1_76bf86849abb01b0a8f9e57f81f8425fbb16aa9e0821ede2987dc72a2c6b148b",
        "doo_v1_76bf86849abb01b0a8f9e57f81f8425fbb16aa9e0821ede2987dc72a2c6b148b",
    ),
    "digitalocean-pat": (
        "dop_v1_26e3ca5e319723a1b0a0d2a05edf177f0041c40c53c3bd68b66a2c3112ccb8a0",
        "dop_v1_26e3ca5e319723a1b0a0d2a05edf177f0041c40c53c3bd68b66a2c3112ccb8a0",
    ),
    "digitalocean-refresh-token": (
        "dor_v1_5a00e2dbbb8a1721ff888e20cfbbff3e43422717a61241bd7fe80fbcbaf0f451",
        "dor_v1_5a00e2dbbb8a1721ff888e20cfbbff3e43422717a61241bd7fe80fbcbaf0f451",
    ),
    "discord-api-token": (
        "discord=4105f74a0805bb46357946d456488c2c4ef9828f1aa9a822e1a23b9045944e15",
        "4105f74a0805bb46357946d456488c2c4ef9828f1aa9a822e1a23b9045944e15",
    ),
    "discord-client-id": ("discord=063687579711413061", "063687579711413061"),
    "discord-client-secret": ("discord=6wafukpbfp130w6wlsgv2f041rcd6zjr", "6wafukpbfp130w6wlsgv2f041rcd6zjr"),
    "doppler-api-token": (
        "dp.pt.wsu77gebwwmc9qnaub23x627h26yhnbp0of7ewdq1qw",
        "dp.pt.wsu77gebwwmc9qnaub23x627h26yhnbp0of7ewdq1qw",
    ),
    "droneci-access-token": ("droneci=boe74a9hm0opl5yakbxg3lpmy78qqc6t", "boe74a9hm0opl5yakbxg3lpmy78qqc6t"),
    "dropbox-api-token": ("dropbox=2ji47k4el31mp0d", "2ji47k4el31mp0d"),
    "dropbox-long-lived-api-token": (
        "dropbox=4mhdymcq8rnAAAAAAAAAA0zospcv8lmu8v89d76fqdt2zsxfy15yh1brhn2m1g8n",
        "4mhdymcq8rnAAAAAAAAAA0zospcv8lmu8v89d76fqdt2zsxfy15yh1brhn2m1g8n",
    ),
    "dropbox-short-lived-api-token": (
        "dropbox=sl.jcrt1z9r9ycsrjp5m5y5b16nxiux7v89xbcc39wjxvptuffnj1baruwj8vxr9axto22msx2t5aee8kthniomtk7dd0cu5tyi78gpto5cd9zsn2u3txqvlimyb8bevr4slbn21td",
        "sl.jcrt1z9r9ycsrjp5m5y5b16nxiux7v89xbcc39wjxvptuffnj1baruwj8vxr9axto22msx2t5aee8kthniomtk7dd0cu5tyi78gpto5cd9zsn2u3txqvlimyb8bevr4slbn21td",
    ),
    "duffel-api-token": (
        "duffel_test_xbjn3yiad73l16mo0hpfkyw8pypimbr7d6mqifxp959",
        "duffel_test_xbjn3yiad73l16mo0hpfkyw8pypimbr7d6mqifxp959",
    ),
    "dynatrace-api-token": (
        "dt0c01.wygj9vyerztr4gjvggnrtsy2.ppzub6jqsulfckm2yvncnib8pd5akehrafg9so3dunoquj5xg3f7ftdwkpsh2knn",
        "dt0c01.wygj9vyerztr4gjvggnrtsy2.ppzub6jqsulfckm2yvncnib8pd5akehrafg9so3dunoquj5xg3f7ftdwkpsh2knn",
    ),
    "easypost-api-token": (
        "EZAK3x0oannx87srjj72b7j02e0ojve0ptk96lvsz6abiz2m8hxjhu3jn0",
        "EZAK3x0oannx87srjj72b7j02e0ojve0ptk96lvsz6abiz2m8hxjhu3jn0",
    ),
    "easypost-test-api-token": (
        "EZTKu6u0m4ddzav8pk3bjuzmy03tmtbujbsay2y33mjq4yrtiedugirybd",
        "EZTKu6u0m4ddzav8pk3bjuzmy03tmtbujbsay2y33mjq4yrtiedugirybd",
    ),
    "etsy-access-token": ("ETSY=smgq9wlhs7hykazquk9m2c7x", "smgq9wlhs7hykazquk9m2c7x"),
    "facebook-access-token": (
        "facebook 669107473199802%h8shn2bu1ym738xtebuhlfrgbya",
        "669107473199802%h8shn2bu1ym738xtebuhlfrgbya",
    ),
    "facebook-page-access-token": (
        "EAACth2rnne3ajftvwec8d7zo6yijlp7xghq2xlbttje6p65yg8o9ri5tp5yxfdlhn3eyibbk0tokvcx3jvnc0kfn4cjgc7s39sak6ns",
        "EAACth2rnne3ajftvwec8d7zo6yijlp7xghq2xlbttje6p65yg8o9ri5tp5yxfdlhn3eyibbk0tokvcx3jvnc0kfn4cjgc7s39sak6ns",
    ),
    "facebook-secret": ("facebook=d69c97a77a07e655a4121c2333b6b21e", "d69c97a77a07e655a4121c2333b6b21e"),
    "fastly-api-token": ("fastly=7gqn0ihhd52xklehl7sldawjejfl0nmr", "7gqn0ihhd52xklehl7sldawjejfl0nmr"),
    "finicity-api-token": ("finicity=c88a9d74baf66b37ccae696d0d286a68", "c88a9d74baf66b37ccae696d0d286a68"),
    "finicity-client-secret": ("finicity=8ctdd3n2zdych8fawwvc", "8ctdd3n2zdych8fawwvc"),
    "finnhub-access-token": ("finnhub=u8hh4v64nyapltxzoel9", "u8hh4v64nyapltxzoel9"),
    "flickr-access-token": ("flickr=wgwqsa3vz2bibm95c4cpx4y0f37a3zo6", "wgwqsa3vz2bibm95c4cpx4y0f37a3zo6"),
    "flutterwave-encryption-key": ("FLWSECK_TEST-b8103c8de0g9", "FLWSECK_TEST-b8103c8de0g9"),
    "flutterwave-public-key": (
        "FLWPUBK_TEST-ag31e10245g0g4c6beha867bb43h78hg-X",
        "FLWPUBK_TEST-ag31e10245g0g4c6beha867bb43h78hg-X",
    ),
    "flutterwave-secret-key": (
        "FLWSECK_TEST-hg8hbg453833b5h7d6e15d7db63c9dag-X",
        "FLWSECK_TEST-hg8hbg453833b5h7d6e15d7db63c9dag-X",
    ),
    "flyio-access-token": (
        "fo1_WXkg6d4IUNLnnFftLHjMcKZbMtXIuk4qVj1z0HE9UXn",
        "fo1_WXkg6d4IUNLnnFftLHjMcKZbMtXIuk4qVj1z0HE9UXn",
    ),
    "frameio-api-token": (
        "fio-u-zco1lck9ketige553btgl9hxqmsrxgg0sn3t8u8f734wwvqv4urqvugricihx83v",
        "fio-u-zco1lck9ketige553btgl9hxqmsrxgg0sn3t8u8f734wwvqv4urqvugricihx83v",
    ),
    "freshbooks-access-token": (
        "freshbooks=x71fl9ss8snijvxjpfs6724j77zgysvcf3xxxww8l6d4vlnrsge7p7j71os8xw0p",
        "x71fl9ss8snijvxjpfs6724j77zgysvcf3xxxww8l6d4vlnrsge7p7j71os8xw0p",
    ),
    "gcp-api-key": ("AIzaRTfTMmE0cGbzCr4X2yPDxz31P2rOMhKvLuh", "AIzaRTfTMmE0cGbzCr4X2yPDxz31P2rOMhKvLuh"),
    "github-app-token": (
        "ghs_yfTgCb9WcAM2TawPPrzPQ9hLl0H1BnFQA7Un",
        "ghs_yfTgCb9WcAM2TawPPrzPQ9hLl0H1BnFQA7Un",
    ),
    "github-fine-grained-pat": (
        "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",
        "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",
    ),
    "github-oauth": ("gho_oEuxd1gpvR1RHZZk6HLHnqAx5qjjxXPU5qm7", "gho_oEuxd1gpvR1RHZZk6HLHnqAx5qjjxXPU5qm7"),
    "github-pat": ("ghp_p3Sq4qZWf5at0IaVdm6AWxR3ZJgrbe0qfLGS", "ghp_p3Sq4qZWf5at0IaVdm6AWxR3ZJgrbe0qfLGS"),
    "github-refresh-token": (
        "ghr_EV1IDGhHmhtpEu9bmrPG4VtCNuJB9VIMJ1fl",
        "ghr_EV1IDGhHmhtpEu9bmrPG4VtCNuJB9VIMJ1fl",
    ),
    "gitlab-cicd-job-token": ("glcbt-I_WwZ1B27l53dn1SCFJP72", "glcbt-I_WwZ1B27l53dn1SCFJP72"),
    "gitlab-deploy-token": ("gldt-bcLCCSAvxyfkF4XYigPu", "gldt-bcLCCSAvxyfkF4XYigPu"),
    "gitlab-feature-flag-client-token": ("glffct-JsYt8HX7ZDtZIj3P79kN", "glffct-JsYt8HX7ZDtZIj3P79kN"),
    "gitlab-feed-token": ("glft-Q6ZeWumBsjorFKLMmSVy", "glft-Q6ZeWumBsjorFKLMmSVy"),
    "gitlab-incoming-mail-token": ("glimt-9zZlR1BuGsH06FePQTpqLFUbt", "glimt-9zZlR1BuGsH06FePQTpqLFUbt"),
    "gitlab-kubernetes-agent-token": (
        "glagent-OfdcJDIymJsWDhEelJKVvLYcvmOT1s3hizeiQw8wq3BHZy6iG0",
        "glagent-OfdcJDIymJsWDhEelJKVvLYcvmOT1s3hizeiQw8wq3BHZy6iG0",
    ),
    "gitlab-oauth-app-secret": (
        "gloas-90uXlBGZ3RgKmdmMF0jLDHQwTwvvYA2SaOJahuq1Bj2RwbNcTcuqPoazoVJMq3zf",
        "gloas-90uXlBGZ3RgKmdmMF0jLDHQwTwvvYA2SaOJahuq1Bj2RwbNcTcuqPoazoVJMq3zf",
    ),
    "gitlab-pat": ("glpat-wmEmjda6yr6wZJU19qTj", "glpat-wmEmjda6yr6wZJU19qTj"),
    "gitlab-pat-routable": (
        "glpat-sKkCXvyc7oohnwyYDnow5QZ2tcI.rgtd3aju2",
        "glpat-sKkCXvyc7oohnwyYDnow5QZ2tcI.rgtd3aju2",
    ),
    "gitlab-ptt": (
        "glptt-6e33481da750cdc826ba71f71cbc1fa7c81be9d0",
        "glptt-6e33481da750cdc826ba71f71cbc1fa7c81be9d0",
    ),
    "gitlab-rrt": ("GR1348941oaXUP4i4MzcuoAfY0IOs", "GR1348941oaXUP4i4MzcuoAfY0IOs"),
    "gitlab-runner-authentication-token": ("glrt-gi3UHhk98mmWGT8GCf6A", "glrt-gi3UHhk98mmWGT8GCf6A"),
    "gitlab-runner-authentication-token-routable": (
        "glrt-t9_OTfycobdu37B5HaSea9iy4Kvhyp.vtzrwpifw",
        "glrt-t9_OTfycobdu37B5HaSea9iy4Kvhyp.vtzrwpifw",
    ),
    "gitlab-scim-token": ("glsoat-g6kEYZTsTgehRUBtdavn", "glsoat-g6kEYZTsTgehRUBtdavn"),
    "gitlab-session-cookie": (
        "_gitlab_session=ey7kmq4vsp43789udkhliple41r7p0hb",
        "_gitlab_session=ey7kmq4vsp43789udkhliple41r7p0hb",
    ),
    "gitter-access-token": (
        "gitter=3vvqf4ch2h7ykqqfzq8uoa23f53jk8p8se30prjh",
        "3vvqf4ch2h7ykqqfzq8uoa23f53jk8p8se30prjh",
    ),
    "gocardless-api-token": (
        "gocardless=live_o2zsb2s4tztkt3zl5kpawdvpxs3cr9y9k7qnaf3q",
        "live_o2zsb2s4tztkt3zl5kpawdvpxs3cr9y9k7qnaf3q",
    ),
    "grafana-api-key": (
        "eyJrIjoibNTA0UpUNtCHmbGdvuBlh4ddBUoJwIcdifFJiDxXoKqTLZ9uLZmNvgbOcXtrrX8ebTQp07",
        "eyJrIjoibNTA0UpUNtCHmbGdvuBlh4ddBUoJwIcdifFJiDxXoKqTLZ9uLZmNvgbOcXtrrX8ebTQp07",
    ),
    "grafana-cloud-api-token": (
        "glc_pTPtmpB2VVZFuZpeSpsMoJKEx46euG0c",
        "glc_pTPtmpB2VVZFuZpeSpsMoJKEx46euG0c",
    ),
    "grafana-service-account-token": (
        "glsa_95kuy4aqxne39td1GAa7oacKRzO6KXv5_Ef6fd3Fb",
        "glsa_95kuy4aqxne39td1GAa7oacKRzO6KXv5_Ef6fd3Fb",
    ),
    "harness-api-key": (
        "pat.poJbhEQU1Rh2jFTo0PihNf.h6Vkn4DUaYriIEnpXZYzNGWg.yU6uKn0woN96U56dohvf",
        "pat.poJbhEQU1Rh2jFTo0PihNf.h6Vkn4DUaYriIEnpXZYzNGWg.yU6uKn0woN96U56dohvf",
    ),
    "hashicorp-tf-api-token": (
        "21v3bxzukavj4s.atlasv1.e3wfmg27y58g6l20sapa50bcp2g37wzi9os0fxhpacikelvewi82tf9177hw",
        "21v3bxzukavj4s.atlasv1.e3wfmg27y58g6l20sapa50bcp2g37wzi9os0fxhpacikelvewi82tf9177hw",
    ),
    "heroku-api-key": ("heroku=e540d574-8531-2125-ef8c-0b5e4b5af8aa", "e540d574-8531-2125-ef8c-0b5e4b5af8aa"),
    "heroku-api-key-v2": (
        "HRKU-AATA6QvQT2f9Iyr6sUQREhQHhzu96QYaSxOZgHSGstqckKYvCI4XOOFKPjsj",
        "HRKU-AATA6QvQT2f9Iyr6sUQREhQHhzu96QYaSxOZgHSGstqckKYvCI4XOOFKPjsj",
    ),
    "hubspot-api-key": (
        "hubspot=2C5FBC91-2EAE-7968-663F-90CB39B254DD",
        "2C5FBC91-2EAE-7968-663F-90CB39B254DD",
    ),
    "huggingface-access-token": (
        "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",
        "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",
    ),
    "huggingface-organization-api-token": (
        "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",
        "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",
    ),
    "infracost-api-token": ("ico-GHJ24i1UH87ptndbRIxuH0t0mqoSeWXO", "ico-GHJ24i1UH87ptndbRIxuH0t0mqoSeWXO"),
    "intercom-api-key": (
        "intercom=avspyeujraz68buj7hkacyxfpl0g00ulbbqw7name7nxuugbwrj6b6fxpbkf",
        "avspyeujraz68buj7hkacyxfpl0g00ulbbqw7name7nxuugbwrj6b6fxpbkf",
    ),
    "intra42-client-secret": (
        "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",
        "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",
    ),
    "jfrog-api-key": (
        "jfrog=5btrerh9lmck3f7n1yfpoenw7e24u3bbfbij1trqw40aw1ajw1hbvrxh4z2krjl3hif5e6jk9",
        "5btrerh9lmck3f7n1yfpoenw7e24u3bbfbij1trqw40aw1ajw1hbvrxh4z2krjl3hif5e6jk9",
    ),
    "jfrog-identity-token": (
        "jfrog=ue8pfaloha8v8eu1qg81ryk1ki94znyjib7jnkd3yprqs8gqi1e10evzy2zmix1l",
        "ue8pfaloha8v8eu1qg81ryk1ki94znyjib7jnkd3yprqs8gqi1e10evzy2zmix1l",
    ),
    "jwt": ("eyIiaQiyEEeydoeuJZ8.eyZbwGyAeXiHHI2G3T2.", "eyIiaQiyEEeydoeuJZ8.eyZbwGyAeXiHHI2G3T2."),
    "jwt-base64": (
        "ZXlKaGJHY2lPaUtS2fIi8E6qtT1zY8FfAA1gcstLcnd8b5Hk5QdUbz",
        "ZXlKaGJHY2lPaUtS2fIi8E6qtT1zY8FfAA1gcstLcnd8b5Hk5QdUbz",
    ),
    "kraken-access-token": (
        "kraken=l30f6vj47s461b092oav4xui9j6ein0bd537qn38ao9xsejdspiwyifkckcdvv6pghncowk2yrguwmqv",
        "l30f6vj47s461b092oav4xui9j6ein0bd537qn38ao9xsejdspiwyifkckcdvv6pghncowk2yrguwmqv",
    ),
    "kucoin-access-token": ("kucoin=6ce88c86ce5df64c71c07445", "6ce88c86ce5df64c71c07445"),
    "kucoin-secret-key": (
        "kucoin=fac49697-2500-f6a7-710d-5826fa43893d",
        "fac49697-2500-f6a7-710d-5826fa43893d",
    ),
    "launchdarkly-access-token": (
        "launchdarkly=s9z65pst2y5a6s70cls3axhrseoinysnewavwakg",
        "s9z65pst2y5a6s70cls3axhrseoinysnewavwakg",
    ),
    "linear-api-key": (
        "lin_api_7pm3fnjc9thim4bh4zlrv29brtoyfa3suv1pw6lr",
        "lin_api_7pm3fnjc9thim4bh4zlrv29brtoyfa3suv1pw6lr",
    ),
    "linear-client-secret": ("linear=1a03644a9d735677920f1ff2c029a862", "1a03644a9d735677920f1ff2c029a862"),
    "linkedin-client-id": ("linkedin=gxhpmh938om2o3", "gxhpmh938om2o3"),
    "linkedin-client-secret": ("linkedin=6bw9h0keoz47nikv", "6bw9h0keoz47nikv"),
    "lob-api-key": (
        "lob=live_a4f70b0a1d261887176d40a81d3b7534707",
        "live_a4f70b0a1d261887176d40a81d3b7534707",
    ),
    "lob-pub-api-key": (
        "lob=test_pub_7a0cca070d87d48af26bba76bb7ac25",
        "test_pub_7a0cca070d87d48af26bba76bb7ac25",
    ),
    "looker-client-id": ("looker=aml1jh639luepb5gpasq", "aml1jh639luepb5gpasq"),
    "looker-client-secret": ("looker=m1q0z1yvswgjybhb6o10p6dh", "m1q0z1yvswgjybhb6o10p6dh"),
    "mailchimp-api-key": (
        "MailchimpSDKginitialize=af716c2e353f30e50dcf60f83bd781b7-us35",
        "af716c2e353f30e50dcf60f83bd781b7-us35",
    ),
    "mailgun-private-api-token": (
        "mailgun=key-ef805895823dcac7302bc579781f92dc",
        "key-ef805895823dcac7302bc579781f92dc",
    ),
    "mailgun-pub-key": (
        "mailgun=pubkey-f46906a2ee43b2b37f660e60b769438f",
        "pubkey-f46906a2ee43b2b37f660e60b769438f",
    ),
    "mailgun-signing-key": (
        "mailgun=ead9dd3d900d695a253bdc00a9b0g55h-c894gfa2-6e1cfb8h",
        "ead9dd3d900d695a253bdc00a9b0g55h-c894gfa2-6e1cfb8h",
    ),
    "mapbox-api-token": (
        "mapbox=pk.rsb1e7vlpd2elh658hu77pgcgwaq8vya9jixitb673c7omyl79cvoi62vrob.x3pcq1fxrvwmomelizg25z",
        "pk.rsb1e7vlpd2elh658hu77pgcgwaq8vya9jixitb673c7omyl79cvoi62vrob.x3pcq1fxrvwmomelizg25z",
    ),
    "mattermost-access-token": ("mattermost=ssobytt7nm5wrpf67as13l6rtw", "ssobytt7nm5wrpf67as13l6rtw"),
    "maxmind-license-key": (
        "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",
        "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",
    ),
    "messagebird-api-token": ("messagebird=33jg46lzrwyhtxml01cs1ahtk", "33jg46lzrwyhtxml01cs1ahtk"),
    "messagebird-client-id": (
        "messagebird=6806c57e-bd90-7e59-472b-e6b9923658d9",
        "6806c57e-bd90-7e59-472b-e6b9923658d9",
    ),
    "microsoft-teams-webhook": (
        "https://z.webhook.office.com/webhookb2/llkrcpup-4y3t-m06d-imbd-v0flj6kaze24@6svrk27p-pvvj-amto-3x42-2cju25gpabsd/IncomingWebhook/lqd06ov3fvbvdxae4r6wgcrs9iu2jfdw/humhtyft-j41e-gm6s-bg02-3a3qpkvpp84y",
        "https://z.webhook.office.com/webhookb2/llkrcpup-4y3t-m06d-imbd-v0flj6kaze24@6svrk27p-pvvj-amto-3x42-2cju25gpabsd/IncomingWebhook/lqd06ov3fvbvdxae4r6wgcrs9iu2jfdw/humhtyft-j41e-gm6s-bg02-3a3qpkvpp84y",
    ),
    "netlify-access-token": (
        "netlify=opjui3z5ci4f55fhfe20tzwpdr9pwtjixrfpam2b",
        "opjui3z5ci4f55fhfe20tzwpdr9pwtjixrfpam2b",
    ),
    "new-relic-browser-api-token": ("new-relic=NRJS-77e1b509249193d9cc8", "NRJS-77e1b509249193d9cc8"),
    "new-relic-insert-key": (
        "new-relic=NRII-b4kz1ylz8m6cou7j37idcq6htgw3x38a",
        "NRII-b4kz1ylz8m6cou7j37idcq6htgw3x38a",
    ),
    "new-relic-user-api-id": (
        "new-relic=ivqeiaey9ah03kvddt6owwjmwyffnnfy636sb6iixci13fstjaqnfsxx0y3z6x56",
        "ivqeiaey9ah03kvddt6owwjmwyffnnfy636sb6iixci13fstjaqnfsxx0y3z6x56",
    ),
    "new-relic-user-api-key": (
        "new-relic=NRAK-v1je5q1ge77i5rwn1gx5zclb7hw",
        "NRAK-v1je5q1ge77i5rwn1gx5zclb7hw",
    ),
    "notion-api-token": (
        "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",
        "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",
    ),
    "npm-access-token": (
        "npm_i5goe51fdw2j9gj44dk4e57xb878luqp4dg0",
        "npm_i5goe51fdw2j9gj44dk4e57xb878luqp4dg0",
    ),
    "nytimes-access-token": ("nytimes=vi9w918omhnn1u8vue6udrl3fi5x0u7o", "vi9w918omhnn1u8vue6udrl3fi5x0u7o"),
    "octopus-deploy-api-key": ("API-5FOWEDJQN68Q60Z14UJT246D95", "API-5FOWEDJQN68Q60Z14UJT246D95"),
    "okta-access-token": (
        "Okta=00a8xXjj8Qsywe9wdlxfXKEwgCPq9n4HNwxVW6mO3v",
        "00a8xXjj8Qsywe9wdlxfXKEwgCPq9n4HNwxVW6mO3v",
    ),
    "openai-api-key": (
        "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",
        "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",
    ),
    "openshift-user-token": (
        "sha256~m97PYuPQKexEicvuKGiAeU6DxPaoGcesvGNFI3JvDr1,",
        "sha256~m97PYuPQKexEicvuKGiAeU6DxPaoGcesvGNFI3JvDr1",
    ),
    "perplexity-api-key": (
        "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",
        "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",
    ),
    "plaid-api-token": (
        "plaid=access-sandbox-4b135cde-81b0-59b1-254c-ac786324a0c8",
        "access-sandbox-4b135cde-81b0-59b1-254c-ac786324a0c8",
    ),
    "plaid-client-id": ("plaid=b0woixc20t56iw7hgm5pscwu", "b0woixc20t56iw7hgm5pscwu"),
    "plaid-secret-key": ("plaid=cxx5ozuk32tywejx7mjfhk3ut9glk1", "cxx5ozuk32tywejx7mjfhk3ut9glk1"),
    "planetscale-api-token": (
        "pscale_tkn_OzTUKY4b378R4VRgGcXGByfpbE9neTKr",
        "pscale_tkn_OzTUKY4b378R4VRgGcXGByfpbE9neTKr",
    ),
    "planetscale-oauth-token": (
        "pscale_oauth_qxHRjt7gGYzTKDKCtABT5TCcebsi7k7A",
        "pscale_oauth_qxHRjt7gGYzTKDKCtABT5TCcebsi7k7A",
    ),
    "planetscale-password": (
        "pscale_pw_MLvvh5ul2kiOB0xTbhuZXTcIlZ3FmHK8",
        "pscale_pw_MLvvh5ul2kiOB0xTbhuZXTcIlZ3FmHK8",
    ),
    "postman-api-token": (
        "PMAK-d54f06c2151f02399e96c526-f588b790b04c7a7a0fff161ccd72470722",
        "PMAK-d54f06c2151f02399e96c526-f588b790b04c7a7a0fff161ccd72470722",
    ),
    "prefect-api-token": (
        "pnu_pXmIQNeXYhCM64D9C5ovApYo5rd977m7JUIK",
        "pnu_pXmIQNeXYhCM64D9C5ovApYo5rd977m7JUIK",
    ),
    "private-key": (
        "-----BEGINPRIVATE KEY-----EoRrRZouwDgKh3CnlANP3DGmhVrfbiR8I3ahd3hM7xV8g9axVYSkIAQS7myQxMKfKEY-----",
        "-----BEGINPRIVATE KEY-----EoRrRZouwDgKh3CnlANP3DGmhVrfbiR8I3ahd3hM7xV8g9axVYSkIAQS7myQxMKfKEY-----",
    ),
    "privateai-api-token": ("privateai=w8awgh08shlwp0is972tbd6rlde9ay8s", "w8awgh08shlwp0is972tbd6rlde9ay8s"),
    "pulumi-api-token": (
        "pul-50bfa95ba16a8a805a9521f46598e0599016a47c",
        "pul-50bfa95ba16a8a805a9521f46598e0599016a47c",
    ),
    "pypi-upload-token": (
        "pypi-AgEIcHlwaS5vcmcar2xWW3kfege2KEeGo6q2Lf88eScfchWfAVHpWsdlWrA4oookR",
        "pypi-AgEIcHlwaS5vcmcar2xWW3kfege2KEeGo6q2Lf88eScfchWfAVHpWsdlWrA4oookR",
    ),
    "rapidapi-access-token": (
        "rapidapi=jnobmagzgk6d7evqysw7k3pk55aw11dnaz379vg1qs5mod328l",
        "jnobmagzgk6d7evqysw7k3pk55aw11dnaz379vg1qs5mod328l",
    ),
    "readme-api-token": (
        "rdme_9cs0athf0uxbcpls2j3u84z6nye9uh29wrcdvb1wd2morjbwtjysbcp7e213m52ihs9ot2",
        "rdme_9cs0athf0uxbcpls2j3u84z6nye9uh29wrcdvb1wd2morjbwtjysbcp7e213m52ihs9ot2",
    ),
    "rubygems-api-token": (
        "rubygems_b1f6efd8eeff4d856071c2234527ad4e22cea228a7961154",
        "rubygems_b1f6efd8eeff4d856071c2234527ad4e22cea228a7961154",
    ),
    "scalingo-api-token": (
        "tk-us-Z6AkSXSv8TIsOYTAciiFHwD4nuhSI7TYM9oiMtVE6HN9aOUd",
        "tk-us-Z6AkSXSv8TIsOYTAciiFHwD4nuhSI7TYM9oiMtVE6HN9aOUd",
    ),
    "sendbird-access-id": (
        "sendbird=6ac8c45f-7279-8b03-a96d-1f223c9f7a11",
        "6ac8c45f-7279-8b03-a96d-1f223c9f7a11",
    ),
    "sendbird-access-token": (
        "sendbird=80142bb8939f411f81e253998874db6fd4135271",
        "80142bb8939f411f81e253998874db6fd4135271",
    ),
    "sendgrid-api-token": (
        "SG.9rtft9wvfa4n36sqy32svfqbz2y4ki0x0v21q9lojw3v6fpj8teqrcpe9bju6pnfha",
        "SG.9rtft9wvfa4n36sqy32svfqbz2y4ki0x0v21q9lojw3v6fpj8teqrcpe9bju6pnfha",
    ),
    "sendinblue-api-token": (
        "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",
        "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",
    ),
    "sentry-access-token": (
        "sentry=29da85435fdecf6cf77d4cb409a5486da80c19485c9077de4bdfaf1df308e082",
        "29da85435fdecf6cf77d4cb409a5486da80c19485c9077de4bdfaf1df308e082",
    ),
    "sentry-org-token": (
        "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=",
        "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=",
    ),
    "sentry-user-token": (
        "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",
        "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",
    ),
    "settlemint-application-access-token": ("sm_aat_67HBIg0uB88UMkFl", "sm_aat_67HBIg0uB88UMkFl"),
    "settlemint-personal-access-token": ("sm_pat_C5IxwGLQLOdZk05c", "sm_pat_C5IxwGLQLOdZk05c"),
    "settlemint-service-access-token": ("sm_sat_eN1Bz8cTuooQeLLY", "sm_sat_eN1Bz8cTuooQeLLY"),
    "shippo-api-token": (
        "shippo_live_bBCAC9e244aBfcAfdCc74645B1C65bCD1DEe3b6D",
        "shippo_live_bBCAC9e244aBfcAfdCc74645B1C65bCD1DEe3b6D",
    ),
    "shopify-access-token": (
        "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",
        "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",
    ),
    "shopify-custom-access-token": (
        "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",
        "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",
    ),
    "shopify-private-app-access-token": (
        "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",
        "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",
    ),
    "shopify-shared-secret": (
        "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",
        "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",
    ),
    "sidekiq-secret": ("BUNDLE_ENTERPRISE__CONTRIBSYS__COM=161e406a:51d02646", "161e406a:51d02646"),
    "sidekiq-sensitive-url": (
        "http://9b973f79:cc7bf3c6@gems.contribsys.com/",
        "9b973f79:cc7bf3c6",
    ),
    "slack-app-token": ("xapp-9-Q-6-z", "xapp-9-Q-6-z"),
    "slack-bot-token": ("xoxb-3501657548-1531890348", "xoxb-3501657548-1531890348"),
    "slack-config-access-token": (
        "xoxe.xoxp-4-TAZF081XVAYO2P0AVWDBFJSEZLFF5O37GJWPV0JY7C3XYOXRHS523X735ULJUKNN3MCXYJ60J87L3X675A9VQKK6GHJ7W70748AJZ236HEOWZHSAHVRV5F0TRGKJS9XVKRP83L3QAR480U91DDD9XNABJ4KF7HH205W",
        "xoxe.xoxp-4-TAZF081XVAYO2P0AVWDBFJSEZLFF5O37GJWPV0JY7C3XYOXRHS523X735ULJUKNN3MCXYJ60J87L3X675A9VQKK6GHJ7W70748AJZ236HEOWZHSAHVRV5F0TRGKJS9XVKRP83L3QAR480U91DDD9XNABJ4KF7HH205W",
    ),
    "slack-config-refresh-token": (
        "xoxe-7-SVNA6ORDH8U4M18XQTA1BIJ5M2IMCDN93CUSNES9QSGJSWPJCBEYNXYVY7O9EVRHFIZDXQSTR8BYXDXC3VRN7XV9PLPQG4PIC1YNA03GRMQQHU55A9AHQWFB6SQNUAB3OP71DOJOL6AKVKX2ZB",
        "xoxe-7-SVNA6ORDH8U4M18XQTA1BIJ5M2IMCDN93CUSNES9QSGJSWPJCBEYNXYVY7O9EVRHFIZDXQSTR8BYXDXC3VRN7XV9PLPQG4PIC1YNA03GRMQQHU55A9AHQWFB6SQNUAB3OP71DOJOL6AKVKX2ZB",
    ),
    "slack-legacy-bot-token": ("xoxb-03054061-38qPSodQL842jWVpfM", "xoxb-03054061-38qPSodQL842jWVpfM"),
    "slack-legacy-token": ("xoxo-0-9-4-D", "xoxo-0-9-4-D"),
    "slack-legacy-workspace-token": ("xoxr-8raDAjDF", "xoxr-8raDAjDF"),
    "slack-user-token": (
        "xoxp-4653841596-5711956476-4509427259-UmPI8E3ir6mlluKj1a7qiSbGUcnP",
        "xoxp-4653841596-5711956476-4509427259-UmPI8E3ir6mlluKj1a7qiSbGUcnP",
    ),
    "slack-webhook-url": (
        "https://hooks.slack.com/services/CC6TITA5jCPvT3oB9MFni3srr1TIDU24q2sBh1nEMcI",
        "https://hooks.slack.com/services/CC6TITA5jCPvT3oB9MFni3srr1TIDU24q2sBh1nEMcI",
    ),
    "snyk-api-token": (
        "snykkey=13966bfb-337e-dbeb-4fb6-039ee2955a5a",
        "13966bfb-337e-dbeb-4fb6-039ee2955a5a",
    ),
    "sonar-api-token": (
        "sonarlogin=x4z6maukacd7k6v8h1qb6qiwgahf3avrkhl9x5o5",
        "x4z6maukacd7k6v8h1qb6qiwgahf3avrkhl9x5o5",
    ),
    "sourcegraph-access-token": (
        "sgp_9D9C40B28AF043F1_f9DAfFe00b658A4dec52a0A3f5d8DcafEB0Bf7BC",
        "sgp_9D9C40B28AF043F1_f9DAfFe00b658A4dec52a0A3f5d8DcafEB0Bf7BC",
    ),
    "square-access-token": ("EAAAwruP9lHA3LgxHUcEXmN14I", "EAAAwruP9lHA3LgxHUcEXmN14I"),
    "squarespace-access-token": (
        "squarespace=e7f31380-612f-60ad-5505-340dddff5966",
        "e7f31380-612f-60ad-5505-340dddff5966",
    ),
    "stripe-access-token": ("sk_test_bUiZzQKmcy", "sk_test_bUiZzQKmcy"),
    "sumologic-access-id": ("Sumo=suCIgjWSOlipwQ", "suCIgjWSOlipwQ"),
    "sumologic-access-token": (
        "Sumo=lsctbi0veuan00dxicsee7zudio40vzwqxynz6orhklixw70bzgt6ai2o3qyukm5",
        "lsctbi0veuan00dxicsee7zudio40vzwqxynz6orhklixw70bzgt6ai2o3qyukm5",
    ),
    "telegram-bot-api-token": (
        "telegr=23401:Ajuh72sd7f1sgljzi13zealn7dn5vzjyiis",
        "23401:Ajuh72sd7f1sgljzi13zealn7dn5vzjyiis",
    ),
    "travisci-access-token": ("travis=xsh7b2icrsp706ycmpxh76", "xsh7b2icrsp706ycmpxh76"),
    "twilio-api-key": ("SK6A80cad847dCfA4f88FC3Da0D683cCCC", "SK6A80cad847dCfA4f88FC3Da0D683cCCC"),
    "twitch-api-token": ("twitch=phnwzimzdow8bdqd2u2nte8elnfpgr", "phnwzimzdow8bdqd2u2nte8elnfpgr"),
    "twitter-access-secret": (
        "twitter=nxl4h52l7t0cqm0jlpuqs52x43oebq3bofcc9ecksuukz",
        "nxl4h52l7t0cqm0jlpuqs52x43oebq3bofcc9ecksuukz",
    ),
    "twitter-access-token": (
        "twitter=776542952869258-mABG0mpwCVz7lL2gRmqq",
        "776542952869258-mABG0mpwCVz7lL2gRmqq",
    ),
    "twitter-api-key": ("twitter=3ami1ef8168tv10okqvjawek4", "3ami1ef8168tv10okqvjawek4"),
    "twitter-api-secret": (
        "twitter=u3tab0g0yfzzplglsqq8w4zsu0xq5t70ykcr7hmoopywua0j3p",
        "u3tab0g0yfzzplglsqq8w4zsu0xq5t70ykcr7hmoopywua0j3p",
    ),
    "twitter-bearer-token": (
        "twitter=AAAAAAAAAAAAAAAAAAAAAA6V5SmRKOyBz3o6sgKqRFh1odxVzqVDT58IXTzNJho87TZeNrFvpIUWWZGszRg3WKC6MJ80khgrj3PbDO",
        "AAAAAAAAAAAAAAAAAAAAAA6V5SmRKOyBz3o6sgKqRFh1odxVzqVDT58IXTzNJho87TZeNrFvpIUWWZGszRg3WKC6MJ80khgrj3PbDO",
    ),
    "typeform-api-token": (
        "typeform=tfp_4iimhcjcjmkpe3rp02c5598obubxcw8r7wyp20orwg18tclyxnchf2xq0sh",
        "tfp_4iimhcjcjmkpe3rp02c5598obubxcw8r7wyp20orwg18tclyxnchf2xq0sh",
    ),
    "vault-batch-token": (
        "hvb.clpN458VEOXxg3zH3ZILPjYf4fpT8UfFvh1DKln44y1BFdQvDk0zNkG2n3EeTgyStxbFigzahEf9yv7MwxBXDLbIy8fqroP8JcqCFNHrJsZQFkiEO3l6wCFqPuCDfOK3xXQmQvEtou",
        "hvb.clpN458VEOXxg3zH3ZILPjYf4fpT8UfFvh1DKln44y1BFdQvDk0zNkG2n3EeTgyStxbFigzahEf9yv7MwxBXDLbIy8fqroP8JcqCFNHrJsZQFkiEO3l6wCFqPuCDfOK3xXQmQvEtou",
    ),
    "vault-service-token": (
        "hvs.IfJZgx3qq7dDHRv0NvrVH8pwERzhCGnWBuc6mDfz3BiHBRtsnohTCj64YNsUk5a5zw5ydqdAPRYChoZNdALHktX9ac",
        "hvs.IfJZgx3qq7dDHRv0NvrVH8pwERzhCGnWBuc6mDfz3BiHBRtsnohTCj64YNsUk5a5zw5ydqdAPRYChoZNdALHktX9ac",
    ),
    "yandex-access-token": (
        "yandex=t1.z.E4gLvudJPPUJ7vEENISSCMTyhxX2v5nnEkJSvbvJdnU3MzCVnbHbA3GbMCRNco9mls9vqSewTkkL0ZEfC21ECW",
        "t1.z.E4gLvudJPPUJ7vEENISSCMTyhxX2v5nnEkJSvbvJdnU3MzCVnbHbA3GbMCRNco9mls9vqSewTkkL0ZEfC21ECW",
    ),
    "yandex-api-key": (
        "yandex=AQVNa6Ncw16FccRaXt3cNPzjoj7sA7qfIv4J2ZI",
        "AQVNa6Ncw16FccRaXt3cNPzjoj7sA7qfIv4J2ZI",
    ),
    "yandex-aws-access-token": (
        "yandex=YCuJx83ZFkjiqtWNhsy1quuqR0txSONAXfsWP2nU",
        "YCuJx83ZFkjiqtWNhsy1quuqR0txSONAXfsWP2nU",
    ),
    "zendesk-secret-key": (
        "zendesk=dni6gm673n8l99r5ncgqbym98pmzvh7zh56ml1nh",
        "dni6gm673n8l99r5ncgqbym98pmzvh7zh56ml1nh",
    ),
    "sk-key": ("sk-FOL2nc", "sk-FOL2nc"),
    "openai-session-key": ("sess-KCswo3vf0Vvx5XUzV38p", "sess-KCswo3vf0Vvx5XUzV38p"),
    "xai-api-key": ("xai-EcuqP3MCgTlwCwwxD9hS", "xai-EcuqP3MCgTlwCwwxD9hS"),
    "groq-api-key": ("gsk_P7Ts7ADWN9rT0Isc956m", "gsk_P7Ts7ADWN9rT0Isc956m"),
    "huggingface-token-any": ("hf_R6QarArx4zT5Osg4FpUD", "hf_R6QarArx4zT5Osg4FpUD"),
    "google-api-key-any": ("AIzaq7ZkHxrWr0Q36lSVCRdC", "AIzaq7ZkHxrWr0Q36lSVCRdC"),
    "google-oauth-access-token": ("ya29.2mHeYkAVMoTaMbmIWgdI", "ya29.2mHeYkAVMoTaMbmIWgdI"),
    "aws-access-key-id-any": ("AKIAWHPILVZIR5O2C81Z", "AKIAWHPILVZIR5O2C81Z"),
    "aws-sigv4-authorization": (_SIGV4, _SIGV4),
    "github-token-any": ("ghs_TnPa5EAlSo8glaW1qeI7", "ghs_TnPa5EAlSo8glaW1qeI7"),
    "github-fine-grained-pat-any": ("github_pat_Lf2bMNDyKYohfe8egU8e", "github_pat_Lf2bMNDyKYohfe8egU8e"),
    "slack-token-any": ("xoxr-YqSEkDB32L", "xoxr-YqSEkDB32L"),
    "jwt-any": ("eyJQd6EnxHK.eyJO22GYwjn.", "eyJQd6EnxHK.eyJO22GYwjn."),
    "bearer-credential": ("Bearer PLANTEDbearerShape0001xyz", "PLANTEDbearerShape0001xyz"),
    "basic-credential": (
        "Basic cGxhbnRlZDpQTEFOVEVEc2hhcGVQYXNzd29yZDE=",
        "cGxhbnRlZDpQTEFOVEVEc2hhcGVQYXNzd29yZDE=",
    ),
}
