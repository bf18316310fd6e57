"""The mitmdump script: ``mitmdump -s addon/proxai.py``. It holds no logic."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from proxai.mitm.addon import ProxAI

addons = [ProxAI()]
