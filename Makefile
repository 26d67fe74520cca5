# hopdag — see README.md. `make ci` is what .ci/run runs.
#
# MODULES lists every published Go module of the repository (nested modules
# keep heavy dependencies out of the core module's graph; see
# docs/packages.md); test and lint run in each. go.work makes them one workspace, so
# `cd $m && go test ./...` tests the working tree, not a published version.
# tools/ (in go.work, not published) builds the test servers (tools/env.sh)
# and holds the release check and the API lister; lint covers it too.
GO         ?= go
FUZZTIME   ?= 20s
STATICCHECK = honnef.co/go/tools/cmd/staticcheck@v0.8.2
MODULES    ?= . bundle state/etcdstore kube cmd/hopdag
NESTED      = bundle state/etcdstore kube cmd/hopdag

.PHONY: test cover bench fuzz lint demo ci tidy release-check api api-check

# TOOLS_TESTED are the tools module's packages with tests of their own
# (the release check's and the API lister's); its other packages are the
# test servers' builds, which tools/env.sh makes.
TOOLS_TESTED = ./releasecheck ./apilist

test:
	@for m in $(MODULES); do echo "== test $$m"; (cd $$m && $(GO) test -race -count=1 ./...) || exit 1; done
	@echo "== test tools"; cd tools && $(GO) test -race -count=1 $(TOOLS_TESTED)

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
	@for m in $(MODULES) tools; do echo "== lint $$m"; (cd $$m && $(GO) vet ./... && $(GO) run $(STATICCHECK) ./...) || exit 1; done

# tidy runs go mod tidy in every module. A nested module requires the others
# at the release version, which no proxy serves before the release, so each
# is tidied with GOWORK=off and temporary replace directives pointing at the
# working tree, which are dropped again afterwards (no go.mod keeps one).
HOPDAG_MODULES = github.com/hopdag/hopdag $(addprefix github.com/hopdag/hopdag/,$(NESTED))
tidy:
	$(GO) mod tidy
	@for m in $(NESTED) tools; do echo "== tidy $$m"; ( cd $$m && root=$$(realpath --relative-to=. $(CURDIR)) && \
	  self=$$($(GO) mod edit -json | sed -n 's/^\t\t"Path": "\(.*\)"/\1/p' | head -n 1) && \
	  for p in $(HOPDAG_MODULES); do [ $$p = $$self ] || $(GO) mod edit -replace=$$p=$$root$${p#github.com/hopdag/hopdag}; done; \
	  GOWORK=off $(GO) mod tidy; rc=$$?; \
	  for p in $(HOPDAG_MODULES); do $(GO) mod edit -dropreplace=$$p; done; exit $$rc ) || exit 1; done

# release-check publishes every module of the working tree at the
# CHANGELOG's version into a temporary file-based module proxy and builds
# fresh consumers of it outside the repository (tools/releasecheck says
# what it checks). It needs the Go module proxy for third-party modules. It
# builds with GOWORK=off, so that a go.mod it must report (a replace, a
# version no workspace module has) cannot stop it from being built.
release-check:
	cd tools && GOWORK=off $(GO) run ./releasecheck -root ..

# api writes api/MODULE.txt, the exported API of each published module (one
# line per name, sorted, like Go's api/*.txt); api-check fails with the
# difference when the code's API is not the file's. A changed line is a
# changed API: regenerate with make api, review, and record it in
# CHANGELOG.md.
api:
	cd tools && $(GO) run ./apilist -root ..

api-check:
	cd tools && $(GO) run ./apilist -root .. -check

demo:
	$(GO) run ./examples/cluster-upgrade

ci: lint api-check release-check test
