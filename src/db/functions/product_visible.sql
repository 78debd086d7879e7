-- What makes a product invisible to the public: hidden locally or by its override, gone upstream, or in a category
-- gone upstream or hidden by its override. The override flags are NULL when no override row exists (left joins).
-- Inlined by the planner (LANGUAGE sql, IMMUTABLE, one expression): its AND terms still filter each table on its own.
CREATE OR REPLACE FUNCTION product_visible(
  p_hidden boolean,
  p_missing boolean,
  p_override_hidden boolean,
  p_category_missing boolean,
  p_category_override_hidden boolean
) RETURNS boolean
LANGUAGE sql
IMMUTABLE PARALLEL SAFE
AS $$
  SELECT NOT p_hidden AND NOT p_missing AND NOT COALESCE(p_override_hidden, false)
     AND NOT p_category_missing AND NOT COALESCE(p_category_override_hidden, false)
$$;
