"""The CrossGuard policy pack (rules arrive with the policy issue). Imports only aicluster.catalog."""
