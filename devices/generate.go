package devices

//go:generate go run ./internal/sunspecgen -in sunspec -out models_gen.go
