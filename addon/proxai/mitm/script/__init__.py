"""The directory of the installed mitmproxy script (``proxai_addon.py``), alone in it.

mitmproxy puts a script's directory on ``sys.path`` while it loads the script (and leaves it there),
so the script has a directory of its own: nothing beside it can shadow a module another package
imports. ``proxai.mitm.launch.script_path()`` names it.
"""
