# Installed by ddtree.sglang.sglang_router; edits are overwritten.
# Starts smg's gateway as `python -m smg.launch_router ARGS` would, with the keys the unit's root-only EnvironmentFile
# holds added to ARGS inside this process: smg takes its keys only as flags (--api-key, --control-plane-api-keys) and
# reads them from no file or variable of its own, so this keeps them off every command line (ps, /proc/PID/cmdline,
# systemctl show). The variables are removed from the environment before smg starts.
import os
import sys

# the one control-plane key the role gives smg: id, name and role as --control-plane-api-keys takes them
CONTROL_PLANE_KEY_PREFIX = "ddtree-sglang:ddtree-sglang:admin:"


def with_keys(argv, environ):
    """ARGV with the flags of the keys ENVIRON sets, each variable taken out of ENVIRON."""
    argv = list(argv)
    api_key = environ.pop("DDTREE_SMG_API_KEY", "")
    control_plane_key = environ.pop("DDTREE_SMG_CONTROL_PLANE_API_KEY", "")
    if api_key:
        argv += ["--api-key", api_key]
    if control_plane_key:
        argv += ["--control-plane-api-keys", CONTROL_PLANE_KEY_PREFIX + control_plane_key]
    return argv


def main():
    sys.argv[1:] = with_keys(sys.argv[1:], os.environ)
    from smg.launch_router import main as launch  # pylint: disable=import-outside-toplevel

    launch()


if __name__ == "__main__":
    main()
