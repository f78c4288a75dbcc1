// Package docs holds the manual (Markdown, with README.md at the top of the repository as its
// front door). It has no code: its test keeps every relative link and #anchor true.
package docs
