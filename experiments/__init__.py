"""What trains, attacks or randomizes models: layer randomization and attacks on explanations;
model, data and cache come from the caller."""
