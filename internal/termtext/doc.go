// Package termtext makes a string that plantd did not write safe to
// print on a terminal: the command line's output of what others chose (a
// consent request's loginHint, a client id, a device's identity strings).
//
// [Safe] writes as Go escapes every rune that could drive the terminal or
// make the printed line read other than it is: the C0 controls (with tab,
// CR and LF, which would shift or forge table lines), DEL, the C1
// controls (\x1b-less escape sequences), the bidirectional formatting
// characters (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069:
// "Trojan Source", CVE-2021-42574, where U+202E shows text reversed), the
// line and paragraph separators (U+2028, U+2029), and each byte of
// invalid UTF-8 (\xff). Everything else is printed as it is.
//
// # Import boundary
//
// This package imports only the standard library; cmd/plantd uses it for
// every string from outside it prints.
//
// Imports: none
package termtext
