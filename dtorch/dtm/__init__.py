"""FlatBuffers code generated from runtime/schema/dtm.fbs by scripts/gen_schema.sh (do not edit)."""
