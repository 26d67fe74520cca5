module github.com/hopdag/hopdag/cmd/hopdag

go 1.26.0

require (
	github.com/hopdag/hopdag v0.0.0
	github.com/stretchr/testify v1.12.1
	go.yaml.in/yaml/v3 v3.0.6
)

require (
	github.com/emirpasic/gods v1.18.1 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/heimdalr/dag v1.5.0 // indirect
)

replace github.com/hopdag/hopdag => ../..
