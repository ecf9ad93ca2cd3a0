"""What the backend tests share by import (a name no other test folder uses)."""

BUCKET = "conformance.appspot.com"
S3_BUCKET = "conformance-media"
