# The two entry points README gives; both start from a fresh machine.
.PHONY: demo test setup lab-up lab-down

demo:  ## set up, start lab hosts ct129 + ct200, deploy (healthy), then the field notes' failure (fast verdict + rollback)
	scripts/demo.sh

test:  ## every test: units, lint, sanity, changelog, build + ansible-doc, molecule scenarios
	scripts/test.sh

setup:
	scripts/setup.sh

lab-up:
	lab/up.sh

lab-down:
	lab/down.sh
