module github.com/hopdag/hopdag

go 1.26.0

require (
	github.com/Masterminds/semver/v3 v3.5.0
	github.com/go-task/slim-sprig/v3 v3.0.0
	github.com/heimdalr/dag v1.5.0
	github.com/stretchr/testify v1.12.1
	go.uber.org/goleak v1.3.0
	go.yaml.in/yaml/v3 v3.0.6
	golang.org/x/sync v0.25.0
)

require (
	github.com/emirpasic/gods v1.18.1 // indirect
	github.com/google/uuid v1.6.0 // indirect
)
