# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""pip's options for pinned wheels: one rule for every role that runs pip."""

from __future__ import annotations

import pytest

from ansible_collections.ddtree.sglang.plugins.filter.wheels import FilterModule


pip_wheel_args = FilterModule().filters()['pip_wheel_args']


@pytest.mark.parametrize(
    'find_links, index_url, allow_unpinned, expected',
    [
        ('/var/cache/wheels', '', False, '--no-deps --require-hashes --no-index --find-links /var/cache/wheels'),
        ('', 'http://127.0.0.1:8080/simple', False, '--no-deps --require-hashes --index-url http://127.0.0.1:8080/simple'),
        ('/var/cache/wheels', '', True, '--no-deps --no-index --find-links /var/cache/wheels'),
        # "no" from INI :vars or -e is false: the hashes stay required
        ('/var/cache/wheels', '', 'no', '--no-deps --require-hashes --no-index --find-links /var/cache/wheels'),
        ('', 'https://pypi.internal/simple', 'yes', '--no-deps --index-url https://pypi.internal/simple'),
    ],
)
def test_pip_wheel_args(find_links, index_url, allow_unpinned, expected):
    assert pip_wheel_args(find_links, index_url, allow_unpinned) == expected
