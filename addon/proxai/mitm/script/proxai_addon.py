"""The mitmdump script of the installed package: ``mitmdump -s "$(python -m proxai addon-path)"``, or
``proxai mitmdump`` (``proxai.mitm.launch``). It holds no logic; ``addon/proxai.py`` is the same
script for a checkout."""

from proxai.mitm.addon import ProxAI

addons = [ProxAI()]
