// Package assets owns the speech-asset mount: its layout, the MODELS.sha256 manifest, and the checks that refuse a corrupt or half-synced mount by name.
package assets
