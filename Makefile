# The two entry points README gives; both start from a fresh machine. `make check` is the inner loop.
.PHONY: demo test check setup lab-up lab-down

demo:  ## set up, start lab hosts ct129 + ct200, deploy (healthy), then the field notes' failure (fast verdict + rollback)
	scripts/demo.sh

test:  ## every test: units, lab units, lint, sanity, changelog, docs, build, molecule scenarios
	scripts/test.sh

check:  ## the inner loop, no lab hosts, within 5 minutes: units, lint, sanity, changelog, docs, build, playbooks
	scripts/test.sh units lint sanity changelog docs build playbooks

setup:
	scripts/setup.sh

lab-up:
	lab/up.sh

lab-down:
	lab/down.sh
