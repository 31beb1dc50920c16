package translate

// Translate is small.
func Translate(s string) string { return double(s) }

// double is a function literal outside any function: a function of its own.
var double = func(s string) string {
	return s + s
}
