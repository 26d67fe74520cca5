# hopdag — see README.md. `make ci` is what .ci/run runs.
GO         ?= go
FUZZTIME   ?= 20s
STATICCHECK = honnef.co/go/tools/cmd/staticcheck@v0.8.2

.PHONY: test cover bench fuzz lint demo ci

test:
	$(GO) test -race -count=1 ./...

cover:
	$(GO) test -count=1 -coverprofile=coverage.out ./...
	$(GO) tool cover -func=coverage.out | tail -n 1

bench:
	$(GO) test -run='^$$' -bench=. -benchmem ./...

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
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

demo:
	$(GO) run ./examples/cluster-upgrade

ci: lint test
