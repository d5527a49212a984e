role: frontend
site:
  name: shop
