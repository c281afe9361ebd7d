package sunspec

//go:generate go run ./internal/sunspecgen -in models -out models_gen.go
