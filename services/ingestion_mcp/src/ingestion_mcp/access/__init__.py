"""Who may do what: the caller and its rights per collection (policy), the OAuth gate of the HTTP endpoint
(auth, oauth), the backend as the caller may use it (guard), and one audit record per write (audit)."""
