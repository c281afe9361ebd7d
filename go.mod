module plantd

go 1.24

require (
	github.com/goburrow/modbus v0.1.0
	github.com/simonvetter/modbus v1.6.3
	gopkg.in/yaml.v3 v3.0.1
)

require github.com/goburrow/serial v0.1.0 // indirect
