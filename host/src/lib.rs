//! codemode host library.
