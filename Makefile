# hopdag — see README.md. `make ci` is what .ci/run runs.
#
# MODULES lists every Go module of the repository (nested modules keep heavy
# dependencies out of the core module's graph); test, lint and cover run in
# each. tools/ is not listed: it only builds the test servers (tools/env.sh).
GO         ?= go
FUZZTIME   ?= 20s
STATICCHECK = honnef.co/go/tools/cmd/staticcheck@v0.8.2
MODULES    ?= . kube

.PHONY: test cover bench fuzz lint demo ci

test:
	@for m in $(MODULES); do echo "== test $$m"; (cd $$m && $(GO) test -race -count=1 ./...) || exit 1; done

cover:
	$(GO) test -count=1 -coverprofile=coverage.out ./...
	$(GO) tool cover -func=coverage.out | tail -n 1

bench:
	@for m in $(MODULES); do (cd $$m && $(GO) test -run='^$$' -bench=. -benchmem ./...) || exit 1; done

# Runs every fuzz target for FUZZTIME each.
fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list='^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "fuzz $$pkg $$f"; \
	    $(GO) test -run='^$$' -fuzz="^$$f$$" -fuzztime=$(FUZZTIME) -fuzzminimizetime=5s $$pkg || exit 1; \
	  done; \
	done

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	@for m in $(MODULES); do echo "== lint $$m"; (cd $$m && $(GO) vet ./... && $(GO) run $(STATICCHECK) ./...) || exit 1; done

demo:
	$(GO) run ./examples/cluster-upgrade

ci: lint test
