"""The drafting pipeline's stage bodies: prompt templates, evidence context, execution."""
